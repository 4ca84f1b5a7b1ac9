package main

import "github.com/spf13/cobra"

// Placeholder until the store lands: database commands are not built yet.
func addDatabaseCatalogCmds(*cobra.Command) {}
