"""CLI subcommands, one module each, registered as ``wasmnn.commands`` entry points."""
