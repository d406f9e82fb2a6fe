package kube

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// ClientOptions is what every command's options embed: the kubectl
// connection flags and the streams, the Getter the root command injects
// (once, so a test swaps it for every command there), and the clients
// Complete builds with it.
type ClientOptions struct {
	Flags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	NewClients Getter

	// Clients are nil until Complete.
	Clients *Clients
}

// Complete builds the clients. A command's own Complete reads its
// arguments, then calls this.
func (o *ClientOptions) Complete(*cobra.Command, []string) error {
	var err error
	o.Clients, err = o.NewClients(o.Flags)
	return err
}
