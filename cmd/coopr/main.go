// Command coopr is the single binary of coopr: server, agent and the
// offline tools for catalog authors.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// exitCode is an error that carries the process exit status after the
// command already told the user what went wrong.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "coopr",
		Short:         "Self-service cluster provisioning",
		Long:          "coopr builds clusters from a catalog of templates: it solves node layouts, plans and runs the work over SSH.",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newSolveCmd(), newPlanCmd(), newCatalogCmd(), newMigrateCmd(), newServerCmd(), newTokenCmd(), newWatchCmd(), newClusterCmd(), newAgentCmd(), newDevCmd(), newLocalCmd(), newLibvirtCmd(), newKnownHostsCmd(), newWebhookCmd(), newKeyCmd(), newSSHCmd())
	root.AddCommand(apiCmds()...)
	refuseUnknown(root)
	return root
}

// refuseUnknown makes every command that only groups others fail on an
// unknown subcommand: cobra would print the group's help and succeed.
func refuseUnknown(c *cobra.Command) {
	for _, sub := range c.Commands() {
		if sub.HasSubCommands() && sub.Run == nil && sub.RunE == nil {
			sub.Args = cobra.ArbitraryArgs
			sub.SuggestionsMinimumDistance = 2
			sub.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return cmd.Help()
				}
				msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					msg += "; did you mean " + strings.Join(s, " or ") + "?"
				}
				return fmt.Errorf("%s (see %s --help)", msg, cmd.CommandPath())
			}
		}
		refuseUnknown(sub)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			return int(code)
		}
		fmt.Fprintln(stderr, "coopr:", err)
		return 1
	}
	return 0
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
