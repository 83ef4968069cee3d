"""A report is a .sql file (sql/reports/NAME.sql) plus the parameters it binds; this runs one."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from .. import sql as _sql
from ..errors import TracekitError


@dataclass(frozen=True)
class Param:
    name: str
    default: object
    choices: tuple | None = None
    help: str = ""


@dataclass(frozen=True)
class Report:
    name: str
    summary: str
    params: tuple[Param, ...] = field(default=())

    @property
    def sql(self) -> _sql.SqlFile:
        return _sql.load("reports", self.name)

    def bind(self, **given) -> dict:
        known = {p.name: p for p in self.params}
        unknown = set(given) - set(known)
        if unknown:
            raise TracekitError(f"report {self.name!r} takes no parameter {', '.join(sorted(unknown))}; "
                                f"it takes: {', '.join(known) or 'none'}")
        values = {}
        for p in self.params:
            v = given.get(p.name)
            v = p.default if v is None else v
            if p.choices and v not in p.choices:
                raise TracekitError(f"report {self.name!r}: {p.name} must be one of {', '.join(p.choices)}, not {v!r}")
            values[p.name] = v
        return values

    def run(self, run, **given) -> pa.Table:
        values = self.bind(**given)
        text = self.sql.text
        used = {k: v for k, v in values.items() if f"${k}" in text}
        return run.sql(text, used or None)
