package main

import (
	"github.com/spf13/cobra"
)

func newMigrateCmd() *cobra.Command {
	var db dbFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := db.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			cmd.Println("database schema is up to date")
			return nil
		},
	}
	db.register(cmd)
	return cmd
}
