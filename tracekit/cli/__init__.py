"""The command line: one module per subcommand, each a thin call into one API function."""
