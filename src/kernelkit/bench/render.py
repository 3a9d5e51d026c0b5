"""`kernelkit report`: recorded ladders and sweeps as one Markdown and one HTML page.

The input is a folder of recordings (``benchmarks/results`` or what ``kernelkit report`` just recorded):
each op's ``<op>.json`` with its roofline PNGs (``kernelkit.bench.record``) and ``sweep-<device>.json``
with its plots (``benchmarks/sweep.py``). The page holds, per family, a table of every rung of every
recorded case (GB/s, share of the copy, speed against torch; the default rung in bold) with the
case's roofline plot (every rung a point, the measured copy rate as the roof), then the sweep's summary
per op and its plots, then the device and versions. Rendering needs no GPU.
"""
from __future__ import annotations

import html
import json
import shutil
import statistics
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Block:
    kind: str  # "h1", "h2", "h3", "p", "table", "img"
    text: str = ""
    header: tuple = ()
    rows: tuple = ()


def _fmt(v, spec: str = ".0f", suffix: str = "") -> str:
    return "-" if v is None else f"{v:{spec}}{suffix}"


def load(folder: Path) -> tuple[dict, list]:
    """({op: its recording}, [sweep documents]) from a folder of recordings."""
    ladders, sweeps = {}, []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(doc, dict) and "op" in doc and "results" in doc:
            ladders[doc["op"]] = doc
        elif isinstance(doc, dict) and "records" in doc and path.name.startswith("sweep"):
            sweeps.append({**doc, "file": path.name})
    return ladders, sweeps


def _family(op: str) -> str:
    try:
        from ..ladder import get_op

        return get_op(op).family
    except Exception:  # noqa: BLE001 - a recording of an op this install does not have
        return "other"


def _default_rung(op: str):
    try:
        from ..ladder import get_op

        return get_op(op).default_variant.name
    except Exception:  # noqa: BLE001
        return None


def _ladder_blocks(op: str, doc: dict, folder: Path) -> list[Block]:
    blocks = [Block("h3", op)]
    default = _default_rung(op)
    for res in doc["results"]:
        shape = "x".join(map(str, res["shape"]))
        params = "".join(f", {k}={v}" for k, v in (res.get("params") or {}).items())
        blocks.append(Block("p", f"{res['dtype']}, {shape}{params}: copy {res.get('copy_gbs_large', 0):.0f} GB/s"))
        rows = []
        for r in res["rows"]:
            name = f"**{r['name']}**" if r["name"] == default else r["name"]
            rows.append((name, _fmt(r.get("median_us"), ".1f"), _fmt(r.get("gbs")), _fmt(r.get("pct_copy"), ".1f", "%"),
                         _fmt(r.get("vs_torch"), ".3f", "x"), r.get("error") or ""))
        blocks.append(Block("table", header=("rung", "time (us)", "GB/s", "% copy", "vs torch", "note"), rows=tuple(rows)))
        png = f"{op}-{res['dtype']}-{shape}.png"
        if (folder / png).is_file():
            blocks.append(Block("img", png))
    return blocks


def _sweep_blocks(doc: dict, folder: Path) -> list[Block]:
    env = doc.get("environment", {})
    blocks = [Block("h2", f"Sweep ({doc['file']})"),
              Block("p", f"{len(doc['records'])} cases on {env.get('device', env.get('gpu', '?'))}: kernelkit's "
                         "default rung, torch eager and a same-bytes copy timed in turn")]
    rows = []
    for op in dict.fromkeys(r["op"] for r in doc["records"]):
        rs = [r for r in doc["records"] if r["op"] == op and r.get("kernelkit_gbs") and r.get("copy_gbs")]
        if not rs:
            continue
        pct = [100 * r["kernelkit_gbs"] / r["copy_gbs"] for r in rs]
        vs = [r["kernelkit_gbs"] / r["torch_gbs"] for r in rs if r.get("torch_gbs")]
        rows.append((op, str(len(rs)), f"{statistics.median(pct):.1f}%", f"{min(pct):.1f}%",
                     f"{statistics.median(vs):.2f}x" if vs else "-", f"{min(vs):.2f}x" if vs else "-"))
    blocks.append(Block("table", header=("op", "cases", "median % copy", "lowest % copy", "median vs torch",
                                         "lowest vs torch"), rows=tuple(rows)))
    stem = doc["file"].removesuffix(".json")
    for png in sorted(folder.glob(f"{stem}-*.png")):
        blocks.append(Block("img", png.name))
    return blocks


def build(folder: Path) -> list[Block]:
    ladders, sweeps = load(folder)
    if not ladders and not sweeps:
        raise FileNotFoundError(f"no recordings in {folder} (an <op>.json of benchmarks/record.py or a "
                                "sweep-<device>.json of benchmarks/sweep.py)")
    blocks = [Block("h1", "kernelkit report")]
    env = next((d.get("environment") for d in (*ladders.values(), *sweeps) if d.get("environment")), None)
    if env:
        blocks.append(Block("p", "; ".join(f"{k}: {v}" for k, v in env.items() if not isinstance(v, (dict, list)))))
    families: dict[str, list] = {}
    for op, doc in ladders.items():
        families.setdefault(_family(op), []).append(op)
    for family, names in families.items():
        blocks.append(Block("h2", f"{family}"))
        for op in names:
            blocks += _ladder_blocks(op, ladders[op], folder)
    for doc in sweeps:
        blocks += _sweep_blocks(doc, folder)
    return blocks


def to_markdown(blocks: list[Block]) -> str:
    out = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out.append("#" * int(b.kind[1]) + " " + b.text)
        elif b.kind == "p":
            out.append(b.text)
        elif b.kind == "img":
            out.append(f"![{b.text}]({b.text})")
        else:
            out.append("| " + " | ".join(b.header) + " |")
            out.append("|" + "---|" * len(b.header))
            out += ["| " + " | ".join(r) + " |" for r in b.rows]
        out.append("")
    return "\n".join(out)


def _cell(text: str) -> str:
    t = html.escape(text)
    return f"<b>{t[2:-2]}</b>" if t.startswith("**") and t.endswith("**") else t


def to_html(blocks: list[Block]) -> str:
    body = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            body.append(f"<{b.kind}>{html.escape(b.text)}</{b.kind}>")
        elif b.kind == "p":
            body.append(f"<p>{html.escape(b.text)}</p>")
        elif b.kind == "img":
            body.append(f'<p><img src="{html.escape(b.text)}" alt="{html.escape(b.text)}" style="max-width:900px"></p>')
        else:
            head = "".join(f"<th>{html.escape(h)}</th>" for h in b.header)
            rows = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in r) + "</tr>" for r in b.rows)
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    style = ("body{font-family:sans-serif;max-width:1000px;margin:2em auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child{text-align:left}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>kernelkit report</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def render(folder: str | Path, out: str | Path) -> tuple[Path, Path]:
    """report.md and report.html of the recordings in ``folder``, written into ``out`` (with the plots)."""
    folder, out = Path(folder), Path(out)
    blocks = build(folder)
    out.mkdir(parents=True, exist_ok=True)
    if out.resolve() != folder.resolve():
        for b in blocks:
            if b.kind == "img":
                shutil.copy2(folder / b.text, out / b.text)
    md, page = out / "report.md", out / "report.html"
    md.write_text(to_markdown(blocks))
    page.write_text(to_html(blocks))
    return md, page
