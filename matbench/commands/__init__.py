"""One module per `matbench` subcommand: `add(subparsers)` declares it, `run(args)` does it."""
