// kubectl, built from the Go module proxy for the walk-through tests (see
// build.sh): the same entry point as k8s.io/kubernetes/cmd/kubectl, whose
// module cannot be built directly (it replaces its staging modules with local
// paths), over the published k8s.io/kubectl module.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
