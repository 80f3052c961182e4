"""The `smneuron` command line: thin typer modules that parse, call one SDK function, render."""
