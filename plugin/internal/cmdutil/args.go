package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// NameArg is the Args of a command on one object: anything but one
// argument is a usage error naming what it takes ("tenant create takes
// one tenant name, got 0 arguments"). kind is the object's kind in words.
func NameArg(kind string) cobra.PositionalArgs {
	return ArgsTaking(1, 1, "one "+kind+" name")
}

// ArgsTaking is the Args of a command that takes min to max arguments,
// described in its usage error as what ("NAME [SERVICE]"). Cobra's own
// checks say only how many.
func ArgsTaking(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			return Usage(fmt.Sprintf("See '%s --help'.", cmd.CommandPath()), "%s takes %s, got %d arguments", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

// ReadFile reads what -f names: the file, or stdin for "-". source names
// it in messages ("stdin" or the path). A file that cannot be read is a
// usage error.
func ReadFile(path string, stdin io.Reader) (data []byte, source string, err error) {
	if path == "-" {
		source = "stdin"
		data, err = io.ReadAll(stdin)
	} else {
		source = path
		data, err = os.ReadFile(path)
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, source, Usage("Check the path given to -f.", "cannot read %s: %v", source, err)
	}
	return data, source, nil
}
