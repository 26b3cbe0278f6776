"""``Interval`` values as ISO 8601 durations: the one spelling documents show, writes and filters
take, and cursors carry (``datetime.timedelta`` in Python).

Shown: days, hours, minutes and seconds with up to six decimals, zero parts left out, a negative
duration with a leading minus (as XML Schema writes it): ``P1DT2H``, ``PT4H30M``, ``PT0.5S``,
``PT0S``, ``-PT1H``. Taken: the same, plus weeks (``P2W``), any part above its range
(``PT90M``) and a decimal comma. Years and months have no fixed length, so they are refused, as
are fractions of anything but seconds. A duration is shorter than ``MAX_DAYS`` days either way:
SQLite keeps an ``Interval`` as the timestamp 1970-01-01 plus it, which must fall between the
years 1 and 9999, and every database takes the same values.
"""
from __future__ import annotations

import datetime as dt
import re

__all__ = ["MAX_DAYS", "duration_text", "parse_duration"]

#: A duration is shorter than this many days either way (about 1,900 years).
MAX_DAYS = 700_000

_DURATION = re.compile(r"(-)?P(?!$)(?:([0-9]{1,12})W)?(?:([0-9]{1,12})D)?"
                       r"(?:T(?=[0-9])(?:([0-9]{1,12})H)?(?:([0-9]{1,12})M)?(?:([0-9]{1,12})(?:[.,]([0-9]{1,6}))?S)?)?")
_MICROSECONDS = (7 * 86_400_000_000, 86_400_000_000, 3_600_000_000, 60_000_000, 1_000_000)


def parse_duration(text: str) -> dt.timedelta:
    """The ``timedelta`` of an ISO 8601 duration (module docstring); ValueError for anything else."""
    match = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r} is not an ISO 8601 duration in weeks, days, hours, minutes and seconds (such as PT4H30M).")
    sign, *parts, fraction = match.groups()
    total = sum(int(part) * unit for part, unit in zip(parts, _MICROSECONDS, strict=True) if part)
    total += int(fraction.ljust(6, "0")) if fraction else 0
    if total >= MAX_DAYS * _MICROSECONDS[1]:
        raise ValueError(f"{text!r} is not shorter than {MAX_DAYS} days.")
    return dt.timedelta(microseconds=-total if sign else total)


def duration_text(value: dt.timedelta) -> str:
    """``value`` as an ISO 8601 duration, as documents show it (``P1DT2H``, ``-PT1H``, ``PT0S``)."""
    total = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    sign, total = ("-" if total < 0 else ""), abs(total)
    days, total = divmod(total, _MICROSECONDS[1])
    hours, total = divmod(total, _MICROSECONDS[2])
    minutes, total = divmod(total, _MICROSECONDS[3])
    seconds, micro = divmod(total, _MICROSECONDS[4])
    time = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if seconds or micro:
        time += f"{seconds}{f'.{micro:06d}'.rstrip('0') if micro else ''}S"
    text = (f"{days}D" if days else "") + (f"T{time}" if time else "")
    return f"{sign}P{text or 'T0S'}"
