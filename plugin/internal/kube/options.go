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

// NameOptions are the ClientOptions of a command on one named object
// (its Args are cmdutil.NameArg): Complete reads the NAME too.
type NameOptions struct {
	ClientOptions
	Name string
}

// Named is c for a command on one named object.
func Named(c ClientOptions) NameOptions { return NameOptions{ClientOptions: c} }

// Complete reads the NAME argument and builds the clients. A command's own
// Complete reads its other arguments, then calls this.
func (o *NameOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		o.Name = args[0]
	}
	return o.ClientOptions.Complete(cmd, args)
}
