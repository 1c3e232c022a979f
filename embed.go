// Package mcppchat holds the files that define mcpp-chat and are built into
// its binaries: the tool contract, the documented configuration defaults and
// the schema patches. It imports nothing of ours.
package mcppchat

import (
	"embed"
	_ "embed"
)

// ModuleYAML is the tool contract: the tools the server serves.
//
//go:embed module.yaml
var ModuleYAML []byte

// ConfigYAML is the documented default configuration.
//
//go:embed config.yaml
var ConfigYAML []byte

// SchemaPatches holds schema.sql (version 1) and patch-N.sql (version N),
// and in pg/ the steps whose SQL differs on PostgreSQL.
//
//go:embed schema_patches/*.sql schema_patches/pg/*.sql
var SchemaPatches embed.FS
