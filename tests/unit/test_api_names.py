"""One API, one skin: every command of the command line calls the public function of ``tracekit`` of the
same name (``tracekit cache list``: ``tracekit.cache_list``), whose parameters carry the command's
option names; and no module of the package replaces one of those functions."""

import importlib
import inspect
import pkgutil

import click

import tracekit
from tracekit.cli import main as cli_main

# Options that shape what the command prints, not what the function computes (output format, file,
# a finding's SQL, the exit code on findings, one of two tables), and one flag that calls another
# function: `ingest --rederive` is tracekit.rederive, `ingest --reduce` tracekit.reduce.
PRESENTATION = {"fmt", "output"}
CLI_ONLY = {"advise": {"show_sql"}, "doctor": {"fail_on"}, "diff": {"only"}, "ingest": {"rederive", "reduce"}}
# a command with several uses calls one function per use (issue 38, item 5: whatif's three verbs), each with
# its own parameters; the command's options are the union of theirs
DISPATCH = {"whatif": ("fit_laws", "predict_plan", "counterfactual")}


def _leaves(cmd, path=()):
    """(path, command) of every command that runs something: a group's subcommands, not the group."""
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(None):
            yield from _leaves(cmd.get_command(None, name), (*path, name))
    else:
        yield path, cmd


COMMANDS = list(_leaves(cli_main.cli))


def test_the_command_list_is_the_clis_own():
    names = {"_".join(path) for path, _ in COMMANDS}
    assert {"ingest", "sql", "cache_list", "cache_clear", "whatif"} <= names  # the walk reaches subcommands


def test_every_command_has_its_function_with_its_parameters():
    for path, cmd in COMMANDS:
        fn_name = "_".join(path)
        assert fn_name in tracekit.__all__, f"`tracekit {' '.join(path)}` has no tracekit.{fn_name} in __all__"
        fns = [getattr(tracekit, n) for n in DISPATCH.get(fn_name, (fn_name,))]
        assert all(map(callable, fns)), f"tracekit.{fn_name}: {fns!r}"
        sig = {k: v for fn in fns for k, v in inspect.signature(fn).parameters.items()}
        takes_any = any(p.kind is p.VAR_KEYWORD for p in sig.values())
        for p in cmd.params:
            if not p.expose_value or p.name in PRESENTATION | CLI_ONLY.get(fn_name, set()):
                continue
            assert p.name in sig or takes_any, (f"`tracekit {' '.join(path)}` takes {p.name} "
                                                f"({'/'.join(p.opts)}); tracekit.{fn_name} has no such parameter")


def test_every_command_calls_its_function():
    """The command's module calls tracekit.NAME: a command that computed its answer itself (or through
    another module) would fail here."""
    for path, cmd in COMMANDS:
        fn_name = "_".join(path)
        source = inspect.getsource(inspect.getmodule(cmd.callback))
        for name in DISPATCH.get(fn_name, (fn_name,)):
            assert f"tracekit.{name}(" in source, f"tracekit/cli/{path[0]}.py never calls tracekit.{name}"


def test_no_module_shadows_an_api_function():
    """Python sets a package's attribute to each submodule it imports: a module tracekit/diff.py would
    replace the function tracekit.diff once imported (hence the command modules in tracekit/commands/)."""
    for m in pkgutil.walk_packages(tracekit.__path__, "tracekit."):
        if m.name.endswith("_fastscan") or ".cli." in m.name and m.name.endswith("__main__"):
            continue
        importlib.import_module(m.name)
    for name in tracekit.__all__:
        if name in ("Run", "TracekitError", "__version__"):
            continue
        assert callable(getattr(tracekit, name)), f"tracekit.{name} is {getattr(tracekit, name)!r}"
        assert inspect.isfunction(getattr(tracekit, name)), f"tracekit.{name} is {getattr(tracekit, name)!r}"
