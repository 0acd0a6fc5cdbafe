"""The help and the docs say what the product does.

Every flag `xlaunch launch --help` lists is documented (docs/launch.md; accelerate's own flags
in docs/config.md, which launch.md points to), with the same default and the same meaning as
far as a test can tell: a switch is documented without a value, an option with one, and a
flag the help calls without effect is one the docs call so, and the other way round. Every
flag the docs list exists. `xlaunch env`'s sample in the docs shows every line it prints, and
the README says where its drop-in claim stops.
"""
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAUNCH_MD = (ROOT / "docs" / "launch.md").read_text()
CONFIG_MD = (ROOT / "docs" / "config.md").read_text()

ACCELERATE_GROUP = "accelerate (FSDP, DeepSpeed, Megatron-LM, dynamo, FP8)"
NO_EFFECT = re.compile(r"no effect|not applied|not run yet|accepted for|changes nothing",
                       re.IGNORECASE)
DEFAULT = re.compile(r"\(default:? ((?:[^()]|\([^()]*\))*)\)")
HELP_COLUMN = 30  # CLI11's: the help text starts here, or on the next line


def help_options(xlaunch_bin):
    """[{names, type, help, group}] from `xlaunch launch --help`."""
    text = subprocess.run([xlaunch_bin, "launch", "--help"], capture_output=True, text=True,
                          check=True).stdout
    options, group = [], None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        help_below = i + 1 < len(lines) and lines[i + 1].startswith(" " * HELP_COLUMN)
        if line and not line.startswith(" ") and line.endswith(":"):
            group = line[:-1]
        elif line.startswith("  -"):
            if help_below:
                left, help_text = line.strip(), ""
            else:
                left, help_text = line[:HELP_COLUMN].strip(), line[HELP_COLUMN:].strip()
            names, _, kind = left.partition(" ")
            options.append({"names": names.split(","), "type": kind.strip() or None,
                            "help": help_text, "group": group})
        elif line.startswith(" " * HELP_COLUMN) and options:
            options[-1]["help"] = (options[-1]["help"] + " " + line.strip()).strip()
    return [o for o in options if "--help" not in o["names"]]


def cells(row):
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def table_after(markdown, header):
    """The rows of the table whose header row is `header`, as lists of cells."""
    lines = markdown.splitlines()
    start = lines.index(header)
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(cells(line))
    return rows


def documented_flags(first_cell):
    """[(flag, placeholder)] of a table's first cell: `--x N`, `--y` -> [("--x","N"), ("--y","")]."""
    return re.findall(r"`(-{1,2}[A-Za-z][\w-]*)((?: [^`]+)?)`", first_cell)


def norm(text):
    text = re.sub(r"[`'\"]", "", text.replace("\\|", "|")).lower()
    return re.sub(r"\s+", " ", text).strip().rstrip(".")


MAIN_ROWS = table_after(LAUNCH_MD, "| flag (aliases) | default | meaning |")
NO_OP_ROWS = table_after(LAUNCH_MD, "| flag | why it changes nothing |")
ACCELERATE_ROWS = table_after(CONFIG_MD, "| flag | in xlaunch |")


def row_of(option, rows):
    for row in rows:
        if set(name for name, _ in documented_flags(row[0])) & set(option["names"]):
            return row
    return None


def test_every_launch_flag_is_documented_with_its_default_and_meaning(xlaunch_bin):
    problems = []
    for option in help_options(xlaunch_bin):
        name = option["names"][0]
        if option["group"] == ACCELERATE_GROUP:
            continue  # next test
        main, no_op = row_of(option, MAIN_ROWS), row_of(option, NO_OP_ROWS)
        if not main and not no_op:
            problems.append(f"{name}: not in docs/launch.md's flag tables")
            continue
        row = main or no_op
        placeholder = [p for n, p in documented_flags(row[0]) if n in option["names"]][0]
        if bool(placeholder.strip()) != bool(option["type"]):
            problems.append(f"{name}: help says {'a value ' + option['type'] if option['type'] else 'a switch'}, "
                            f"docs write `{name}{placeholder}`")
        help_no_effect = bool(NO_EFFECT.search(option["help"])) or "without effect" in option["group"]
        docs_no_effect = no_op is not None or bool(NO_EFFECT.search(row[-1]))
        if help_no_effect != docs_no_effect:
            problems.append(f"{name}: help {'calls it without effect' if help_no_effect else 'gives it an effect'} "
                            f"({option['help']!r}), docs do not agree ({row[-1]!r})")
        if main:
            found = DEFAULT.search(option["help"])
            documented = main[1]
            if found and norm(found.group(1)) != norm(documented):
                problems.append(f"{name}: help's default {found.group(1)!r} vs docs' {documented!r}")
            if not found and norm(documented) not in ("—", "off"):
                problems.append(f"{name}: docs give the default {documented!r}, help none")
            if norm(documented) == "off" and option["type"]:
                problems.append(f"{name}: docs say 'off' for an option that takes a value")
    assert not problems, "\n".join(problems)


def test_accelerates_flags_are_documented_and_their_refusals_said(xlaunch_bin):
    problems = []
    docs = LAUNCH_MD + CONFIG_MD
    for option in help_options(xlaunch_bin):
        if option["group"] != ACCELERATE_GROUP:
            continue
        flags = [n for n in option["names"] if n.startswith("--")]
        key = flags[0][2:]
        mentions = [line for line in docs.splitlines()
                    if any(f"`{f}" in line for f in flags) or f"`{key}`" in line
                    or f"`{key} (" in line or f", {key} (" in line]
        if not mentions:
            problems.append(f"{flags[0]}: neither docs/launch.md nor docs/config.md mentions it")
            continue
        if re.search(r"^refused", option["help"], re.IGNORECASE) and not any(
                "exit 2" in line for line in mentions):
            problems.append(f"{flags[0]}: help says refused, no docs line says exit 2")
        if NO_EFFECT.search(option["help"]) and not any(
                re.search(r"no effect", line, re.IGNORECASE) for line in mentions):
            problems.append(f"{flags[0]}: help says no effect ({option['help']!r}), the docs "
                            f"lines mentioning it do not: {mentions}")
    assert not problems, "\n".join(problems)


def test_no_flag_name_is_taken_twice(xlaunch_bin):
    # The flags live in CLI11 option groups (cli/flag_groups.hpp), which check a new name only
    # against their own group's: a name in two groups would parse into one of them silently.
    for command in (["launch"], ["test"]):
        text = subprocess.run([xlaunch_bin, *command, "--help"], capture_output=True,
                              text=True, check=True).stdout
        seen = {}
        for line in text.splitlines():
            if not line.startswith("  -"):
                continue
            for name in line.split()[0].split(","):
                assert name not in seen, f"{command}: {name} twice: {seen[name]!r} and {line!r}"
                seen[name] = line
        assert "--num_processes" in seen and "--use_fsdp" in seen and "-h" in seen


def test_every_documented_flag_exists(xlaunch_bin):
    known = {n for option in help_options(xlaunch_bin) for n in option["names"]}
    missing = [f for row in MAIN_ROWS + NO_OP_ROWS + ACCELERATE_ROWS
               for f, _ in documented_flags(row[0]) if f not in known]
    assert not missing, f"documented but not in `xlaunch launch --help`: {missing}"


def test_the_env_sample_shows_every_line_xlaunch_env_prints(xlaunch_bin):
    out = subprocess.run([xlaunch_bin, "env"], capture_output=True, text=True, check=True).stdout
    labels = [m.group(1) for line in out.splitlines()
              if (m := re.match(r"^(\s*[^:]+):\s{2,}", line))]
    assert "Python for .py" in [l.strip() for l in labels], out
    sample = (ROOT / "docs" / "commands.md").read_text()
    sample = sample[sample.index("$ CUDA_VISIBLE_DEVICES=6,7 xlaunch env"):]
    sample = sample[:sample.index("~~~")]
    missing = [l for l in labels if f"\n{l}:" not in sample]
    assert not missing, f"docs/commands.md's `xlaunch env` sample lacks {missing}"


def test_readme_says_where_running_accelerates_command_lines_unchanged_stops():
    readme = (ROOT / "README.md").read_text()
    claim = readme.index("run unchanged")
    paragraph = readme[claim:readme.index("\n* ", claim)]
    assert "`--multi_gpu`" in paragraph and "no GPU" in paragraph and "refused" in paragraph
    assert "accelerate" in paragraph and "CPU workers" in paragraph
