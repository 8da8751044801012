"""The page's catalogues are ICU MessageFormat messages (api/static/i18n, read in the browser by the vendored
intl-messageformat). This reads the part of ICU they use, for the tests: `{name}`, `{name, number}`,
`{name, plural, =0 {...} one {...} other {...}}` with `#`, `{name, select, a {...} other {...}}` and
ICU's apostrophe quoting. `fill` words a message as the page would; `arguments` lists what it asks for.
"""

from __future__ import annotations

from dataclasses import dataclass

# CLDR's cardinal plural rules for the integers the page counts with
PLURAL_RULES = {
    "en": lambda n: "one" if n == 1 else "other",
    "es": lambda n: "one" if n == 1 else "other",
    "pt-BR": lambda n: "one" if n in (0, 1) else "other",  # Portuguese gives 0 the "one" form
}


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str  # "simple", "number", "plural", "select"
    branches: dict | None = None  # selector -> list of parts


class IcuError(ValueError):
    pass


def parse(message: str) -> list:
    parts, at = _parse(message, 0, in_plural=False, top=True)
    if at != len(message):
        raise IcuError(f"unexpected '}}' at {at} in {message!r}")
    return parts


def _parse(s: str, i: int, in_plural: bool, top: bool) -> tuple[list, int]:
    parts: list = []
    text = []
    while i < len(s):
        c = s[i]
        if c == "'":
            if i + 1 < len(s) and s[i + 1] == "'":
                text.append("'")
                i += 2
                continue
            if i + 1 < len(s) and (s[i + 1] in "{}" or (in_plural and s[i + 1] == "#")):
                end = s.find("'", i + 1)
                if end < 0:
                    raise IcuError(f"an unclosed quote in {s!r}")
                text.append(s[i + 1:end])
                i = end + 1
                continue
            text.append(c)
            i += 1
        elif c == "#" and in_plural:
            if text:
                parts.append("".join(text))
                text = []
            parts.append("#")
            i += 1
        elif c == "{":
            if text:
                parts.append("".join(text))
                text = []
            arg, i = _argument(s, i + 1)
            parts.append(arg)
        elif c == "}":
            if top:
                raise IcuError(f"unexpected '}}' at {i} in {s!r}")
            break
        else:
            text.append(c)
            i += 1
    if text:
        parts.append("".join(text))
    return parts, i


def _argument(s: str, i: int) -> tuple[Arg, int]:
    end_name = i
    while end_name < len(s) and s[end_name] not in ",}":
        end_name += 1
    name = s[i:end_name].strip()
    if not name or not name.replace("_", "a").isalnum():
        raise IcuError(f"a bad argument name {name!r} in {s!r}")
    if end_name >= len(s):
        raise IcuError(f"an unclosed argument in {s!r}")
    if s[end_name] == "}":
        return Arg(name, "simple"), end_name + 1
    j = end_name + 1
    comma = s.find(",", j)
    close = s.find("}", j)
    if close >= 0 and (comma < 0 or close < comma):
        kind = s[j:close].strip()
        if kind != "number":
            raise IcuError(f"an argument type {kind!r} the page does not use in {s!r}")
        return Arg(name, "number"), close + 1
    kind = s[j:comma].strip()
    if kind not in ("plural", "select"):
        raise IcuError(f"an argument type {kind!r} the page does not use in {s!r}")
    j = comma + 1
    branches: dict = {}
    while True:
        while j < len(s) and s[j].isspace():
            j += 1
        if j >= len(s):
            raise IcuError(f"an unclosed {kind} in {s!r}")
        if s[j] == "}":
            j += 1
            break
        k = j
        while k < len(s) and not s[k].isspace() and s[k] != "{":
            k += 1
        selector = s[j:k]
        while k < len(s) and s[k].isspace():
            k += 1
        if k >= len(s) or s[k] != "{":
            raise IcuError(f"the {kind} branch {selector!r} has no message in {s!r}")
        body, k = _parse(s, k + 1, in_plural=kind == "plural", top=False)
        if k >= len(s) or s[k] != "}":
            raise IcuError(f"the {kind} branch {selector!r} is not closed in {s!r}")
        if selector in branches:
            raise IcuError(f"the {kind} branch {selector!r} twice in {s!r}")
        branches[selector] = body
        j = k + 1
    if "other" not in branches:
        raise IcuError(f"a {kind} without its 'other' branch in {s!r}")
    return Arg(name, kind, branches), j


def arguments(message: str) -> dict[str, set[str]]:
    """Every argument a message asks for, with how it is used ({"count": {"plural"}, "who": {"simple"}})."""
    out: dict[str, set[str]] = {}

    def walk(parts):
        for p in parts:
            if isinstance(p, Arg):
                out.setdefault(p.name, set()).add(p.kind)
                for body in (p.branches or {}).values():
                    walk(body)

    walk(parse(message))
    return out


def args_of_kind(message: str, kind: str) -> list[Arg]:
    """The message's plural (or select) arguments, outermost first."""
    found = []

    def walk(parts):
        for p in parts:
            if isinstance(p, Arg):
                if p.kind == kind:
                    found.append(p)
                for body in (p.branches or {}).values():
                    walk(body)

    walk(parse(message))
    return found


def fill(message: str, params: dict, lang: str = "en") -> str:
    """The message worded as the page words it (numbers as plain digits: the tests' counts are small)."""
    return _fill(parse(message), params, lang, None)


def _fill(parts, params, lang, number) -> str:
    out = []
    for p in parts:
        if p == "#":
            out.append(str(number))
        elif isinstance(p, str):
            out.append(p)
        elif p.kind in ("simple", "number"):
            out.append(str(params[p.name]) if p.name in params else "{" + p.name + "}")
        elif p.kind == "plural":
            n = params[p.name]
            body = p.branches.get(f"={n}") or p.branches.get(PLURAL_RULES[lang](n)) or p.branches["other"]
            out.append(_fill(body, params, lang, n))
        else:
            key = str(params[p.name])
            out.append(_fill(p.branches.get(key, p.branches["other"]), params, lang, number))
    return "".join(out)
