"""One module per `aligners` subcommand: `add_arguments(parser)` and `run(args) -> int`."""
