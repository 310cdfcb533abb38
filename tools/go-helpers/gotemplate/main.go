// Renders Go text/template templates as Argo CD's ApplicationSet controller
// does with goTemplate: true and goTemplateOptions ["missingkey=error"], for
// the examples test. Reads {"templates": [...], "params": [{...}]} on stdin and
// prints {"results": [[one string per template] per parameter set]}; a render
// error becomes "ERROR: <message>".
package main

import (
	"encoding/json"
	"os"
	"strings"
	"text/template"
)

type input struct {
	Templates []string                 `json:"templates"`
	Params    []map[string]interface{} `json:"params"`
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		panic(err)
	}
	results := make([][]string, 0, len(in.Params))
	for _, params := range in.Params {
		row := make([]string, 0, len(in.Templates))
		for _, text := range in.Templates {
			var out strings.Builder
			tpl, err := template.New("t").Option("missingkey=error").Parse(text)
			if err == nil {
				err = tpl.Execute(&out, params)
			}
			if err != nil {
				row = append(row, "ERROR: "+err.Error())
			} else {
				row = append(row, out.String())
			}
		}
		results = append(results, row)
	}
	if err := json.NewEncoder(os.Stdout).Encode(map[string]interface{}{"results": results}); err != nil {
		panic(err)
	}
}
