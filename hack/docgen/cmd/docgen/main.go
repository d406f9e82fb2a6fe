// Command docgen writes docs/reference from the code (make docs).
package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/docgen"
)

func main() {
	root, err := cluster.RepoRoot()
	if err == nil {
		var written []string
		if written, err = docgen.Write(root); err == nil {
			sort.Strings(written)
			for _, p := range written {
				fmt.Println(p)
			}
			return
		}
	}
	fmt.Fprintln(os.Stderr, "docgen:", err)
	os.Exit(1)
}
