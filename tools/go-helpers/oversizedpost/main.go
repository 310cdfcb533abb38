// Command oversizedpost posts bodies larger than a server accepts, with Go's
// net/http client as Argo CD's ApplicationSet controller does, and reports
// what the client saw for each request: the status code, or the error (for
// example "connection reset by peer" when the server closed the connection
// while the body was still being sent).
//
// Usage: oversizedpost -url URL -token TOKEN -sizes 2097152,8388608 -count 50
// Prints one JSON object: {"<size>": {"413": 50, "error: ...": n}, ...}.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	url := flag.String("url", "", "the URL to POST to")
	token := flag.String("token", "", "bearer token")
	sizes := flag.String("sizes", "2097152", "comma-separated body sizes in bytes")
	count := flag.Int("count", 50, "requests per size")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "oversizedpost: -url is required")
		os.Exit(2)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	results := map[string]map[string]int{}
	for _, field := range strings.Split(*sizes, ",") {
		size, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil {
			fmt.Fprintf(os.Stderr, "oversizedpost: bad size %q\n", field)
			os.Exit(2)
		}
		// A JSON document of the given size: {"pad":"xxx..."}.
		body := append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), size-10)...), '"', '}')
		seen := map[string]int{}
		for i := 0; i < *count; i++ {
			seen[post(client, *url, *token, body)]++
		}
		results[strconv.Itoa(len(body))] = seen
	}
	out, _ := json.Marshal(results)
	fmt.Println(string(out))
}

func post(client *http.Client, url, token string, body []byte) string {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "error: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Sprintf("%d, then reading the body: %v", resp.StatusCode, err)
	}
	return strconv.Itoa(resp.StatusCode)
}
