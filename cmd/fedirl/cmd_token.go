package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/federation"
)

// tokenOptions holds the flags of "fedirl server token revoke|rotate".
type tokenOptions struct {
	task, client, server, store, adminFile, out string
	tls                                         tlsClientFlags
}

// newServerTokenCmd builds "fedirl server token" with its revoke and rotate
// verbs.
func newServerTokenCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Revoke or rotate a client's token, on a running server or in a store"}
	for _, rotate := range []bool{federation.Revoke, federation.Rotate} {
		f := &tokenOptions{}
		use, short := "revoke", "Revoke a client's token: refused at once with the reason, the client's connections closed"
		if rotate {
			use, short = "rotate", "Replace a client's token by a new one (written as {\"client\": \"token\"} JSON to --out); the old one is refused at once"
		}
		c := &cobra.Command{
			Use:   use,
			Short: short,
			Long: short + `.

With --server (and --admin-token-file) it acts on a running server, effective
at once: the old token's next call is refused (PermissionDenied, naming the
revocation), every connection the client authenticated is closed, and the
server's audit log records it with the client id. With --store it changes a
store no server holds. The client keeps its place in the task (its past
submissions stay); with revoke no token authenticates as it any more.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return runTokenRevoke(cmd, f, rotate) },
		}
		fs := c.Flags()
		fs.StringVar(&f.task, "task", "", "task id (required)")
		fs.StringVar(&f.client, "client", "", "client id (required)")
		fs.StringVar(&f.server, "server", "", "address of a running server (host:port)")
		fs.StringVar(&f.store, "store", "", "change this store file instead (server stopped)")
		fs.StringVar(&f.adminFile, "admin-token-file", "", "file holding the server's admin token (with --server)")
		if rotate {
			fs.StringVar(&f.out, "out", "-", "where to write the new token as {\"client\": \"token\"} JSON (- for stdout)")
		}
		f.tls.register(c)
		cmd.AddCommand(c)
	}
	return cmd
}

func runTokenRevoke(cmd *cobra.Command, f *tokenOptions, rotate bool) error {
	if f.task == "" || f.client == "" {
		return errors.New("--task and --client are required")
	}
	var tok string
	switch {
	case (f.server == "") == (f.store == ""):
		return errors.New("give exactly one of --server or --store")
	case f.store != "":
		s, err := federation.OpenStoreWith(f.store, federation.StoreOptions{})
		if err != nil {
			return err
		}
		defer s.Close()
		if tok, err = s.RevokeToken(f.task, f.client, rotate, time.Now()); err != nil {
			return fmt.Errorf("--task %s --client %s: %w", f.task, f.client, err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "client %s of task %s: token %s in %s\n", f.client, f.task, map[bool]string{false: "revoked", true: "rotated"}[rotate], f.store)
	default:
		if f.adminFile == "" {
			return errors.New("--server needs --admin-token-file")
		}
		c, err := f.tls.dialAdmin(f.server, f.adminFile)
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
		defer cancel()
		var closed int
		if tok, closed, err = c.RevokeToken(ctx, f.task, f.client, rotate); err != nil {
			return connHint(fmt.Errorf("revoking on %s: %w", f.server, err))
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "client %s of task %s: token %s on %s; %d of its connections closed\n", f.client, f.task, map[bool]string{false: "revoked", true: "rotated"}[rotate], f.server, closed)
	}
	if !rotate {
		return nil
	}
	b, _ := json.Marshal(map[string]string{f.client: tok})
	if f.out == "" || f.out == "-" {
		_, err := fmt.Fprintln(cmd.OutOrStdout(), string(b))
		return err
	}
	return os.WriteFile(f.out, append(b, '\n'), 0o600)
}
