"""The code of the commands that have more than a few lines of their own, one module per command, named
after it (`tracekit diff` is commands/diff.py). The public functions are tracekit.NAME (tracekit/api.py);
these modules sit one level down so that importing one never replaces the function of its name."""
