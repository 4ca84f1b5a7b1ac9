package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/client"
)

func newSSHCmd() *cobra.Command {
	var api apiFlags
	var printOnly bool
	cmd := &cobra.Command{
		Use:   "ssh CLUSTER [NODE] [-- SSH-ARGUMENTS...]",
		Short: "Log in to a node of a cluster, checking the host key coopr pinned",
		Long: `ssh runs ssh as the node's SSH user at the node's address, with the host
keys coopr pinned for the node as the only ones it trusts
(StrictHostKeyChecking=yes): a host that shows another key is refused, and
nothing is added to your ~/.ssh/known_hosts. The keys on your profile (coopr
key add) reach the nodes of your clusters when they are bootstrapped.

NODE is a node's host name, its short name, its id or its number; without it,
the cluster's first node. Arguments after -- go to ssh as they are: a port,
a key file, a command to run.

--print prints the command instead of running it; the pinned keys it names
are in a file under your cache directory that stays.

` + clusterArgHelp,
		Example: `  coopr ssh demo
  coopr ssh demo demo-1002 -- -i ~/.ssh/work_ed25519 uptime
  coopr ssh demo --print`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			extra := []string{}
			if n := cmd.ArgsLenAtDash(); n >= 0 {
				args, extra = args[:n], args[n:]
			}
			if len(args) < 1 || len(args) > 2 {
				return fmt.Errorf("want CLUSTER and at most one NODE before --, got %d arguments", len(args))
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var node string
			if len(args) == 2 {
				node = args[1]
			}
			l, err := loginOf(cmd.Context(), c, id, node, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if printOnly {
				dir, err := os.UserCacheDir()
				if err != nil {
					return fmt.Errorf("--print keeps the pinned keys under your cache directory: %w", err)
				}
				path := filepath.Join(dir, "coopr", "known_hosts", id+"-"+l.nodeID)
				if err := l.writeKnownHosts(path); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), shellJoin(append([]string{"ssh"}, l.args(path, extra)...)))
				return nil
			}
			tmp, err := os.MkdirTemp("", "coopr-ssh-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			path := filepath.Join(tmp, "known_hosts")
			if err := l.writeKnownHosts(path); err != nil {
				return err
			}
			ssh := exec.CommandContext(cmd.Context(), "ssh", l.args(path, extra)...)
			ssh.Stdin, ssh.Stdout, ssh.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			err = ssh.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				// ssh said why; pass its status on as ours.
				return exitCode(ee.ExitCode())
			}
			if err != nil {
				return fmt.Errorf("run ssh: %w (is OpenSSH's client installed?)", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&printOnly, "print", false, "print the ssh command instead of running it")
	api.register(cmd)
	return cmd
}

// login is where and how to log in to one node.
type login struct {
	nodeID, hostname string
	user, addr       string
	hostKeys         []string // authorized_keys lines
}

// knownHostsAlias names the node in the known_hosts file coopr ssh writes
// (ssh's HostKeyAlias): one name whatever the address and port.
const knownHostsAlias = "coopr-node"

func (l *login) writeKnownHosts(path string) error {
	var b strings.Builder
	for _, k := range l.hostKeys {
		b.WriteString(knownHostsAlias + " " + k + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("known_hosts for %s: %w", l.hostname, err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("known_hosts for %s: %w", l.hostname, err)
	}
	return nil
}

// args are ssh's arguments: the pin first (ssh takes the first value of an
// option), then the caller's, then the destination. A command among the
// caller's arguments follows the destination, where ssh wants it.
func (l *login) args(knownHosts string, extra []string) []string {
	a := []string{"-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + knownHosts,
		"-o", "GlobalKnownHostsFile=/dev/null", "-o", "HostKeyAlias=" + knownHostsAlias, "-o", "CheckHostIP=no"}
	opts, command := splitSSHArgs(extra)
	a = append(a, opts...)
	a = append(a, "-l", l.user, "--", l.addr)
	return append(a, command...)
}

// sshFlagsWithValue are ssh's options that take a value (ssh(1)).
const sshFlagsWithValue = "BbcDEeFIiJLlmOoPpQRSWw"

// splitSSHArgs splits ssh arguments into options and the command after
// them.
func splitSSHArgs(args []string) (opts, command []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return opts, args[i+1:]
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return opts, args[i:]
		}
		opts = append(opts, a)
		// -p 2222 (value apart) or -p2222 (together); flags may be grouped (-tA).
		for j := 1; j < len(a); j++ {
			if strings.IndexByte(sshFlagsWithValue, a[j]) >= 0 {
				if j == len(a)-1 && i+1 < len(args) {
					i++
					opts = append(opts, args[i])
				}
				break
			}
		}
	}
	return opts, nil
}

// loginOf finds the node to log in to: by host name, short name, id or
// number; the first node without one.
func loginOf(ctx context.Context, c *client.Client, clusterID, node string, note io.Writer) (*login, error) {
	var out struct {
		Cluster *struct {
			Nodes []struct {
				ID          string
				Nodenum     int
				Hostname    string
				Sshuser     string
				Ipaddresses map[string]string
				HostKeys    []struct{ Key string }
			}
		}
	}
	if err := gql(ctx, c, `query($id: ID!) { cluster(id: $id) { nodes { id nodenum hostname sshuser ipaddresses hostKeys { key } } } }`,
		map[string]any{"id": clusterID}, &out); err != nil {
		return nil, err
	}
	if out.Cluster == nil {
		return nil, notFound("cluster %s: not found (coopr cluster list shows the clusters you can see)", clusterID)
	}
	ns := out.Cluster.Nodes
	if len(ns) == 0 {
		return nil, fmt.Errorf("cluster %s has no nodes", clusterID)
	}
	i := -1
	var names []string
	for j, n := range ns {
		short, _, _ := strings.Cut(n.Hostname, ".")
		names = append(names, short)
		if node == "" && j == 0 || node != "" && (node == n.Hostname || node == short || node == n.ID || node == strconv.Itoa(n.Nodenum)) {
			if i >= 0 && node != "" {
				return nil, fmt.Errorf("node %q: more than one node has that name; give its id", node)
			}
			i = j
		}
	}
	if i < 0 {
		return nil, fmt.Errorf("node %q: not a node of the cluster; its nodes are %s", node, strings.Join(names, ", "))
	}
	n := ns[i]
	if node == "" && len(ns) > 1 {
		fmt.Fprintf(note, "logging in to %s, the first of %d nodes (name another: %s)\n", n.Hostname, len(ns), strings.Join(names, ", "))
	}
	l := &login{nodeID: n.ID, hostname: n.Hostname, user: n.Sshuser, addr: n.Ipaddresses["access_v4"]}
	if l.addr == "" {
		l.addr = n.Ipaddresses["bind_v4"]
	}
	if l.addr == "" {
		return nil, fmt.Errorf("node %s has no address yet: its machine has not been confirmed", n.Hostname)
	}
	if l.user == "" {
		l.user = "root"
	}
	for _, k := range n.HostKeys {
		l.hostKeys = append(l.hostKeys, k.Key)
	}
	if len(l.hostKeys) == 0 {
		// Without a pin, StrictHostKeyChecking=yes would refuse any host:
		// say so rather than let ssh say it less clearly.
		return nil, fmt.Errorf("node %s: no host key pinned yet (coopr has not reached it), so its identity cannot be checked", n.Hostname)
	}
	return l, nil
}

// shellJoin quotes words for a POSIX shell where they need it.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@,+%") == "" {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
