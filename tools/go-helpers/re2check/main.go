// go_check runs the RE2 test vectors through Go's own regexp package, the
// engine Google's MCO used, and prints one JSON result per vector.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
)

type vector struct {
	Pattern string `json:"pattern"`
	Input   string `json:"input"`
}

type result struct {
	Error bool `json:"error"`
	Match bool `json:"match"`
}

func main() {
	var vectors []vector
	if err := json.NewDecoder(os.Stdin).Decode(&vectors); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	results := make([]result, len(vectors))
	for i, v := range vectors {
		re, err := regexp.Compile(v.Pattern)
		if err != nil {
			results[i] = result{Error: true}
			continue
		}
		results[i] = result{Match: re.MatchString(v.Input)}
	}
	_ = json.NewEncoder(os.Stdout).Encode(results)
}
