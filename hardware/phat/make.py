#!/usr/bin/python3
"""The pHAT made from pinout.toml with KiCad's Python API (Debian's KiCad 6: `pcbnew`
for the system's python3): the board placed (board.py) and routed (route.py), its
design-rule check, what a fab takes, and its picture.

    /usr/bin/python3 hardware/phat/make.py           write them all, beside this file
    /usr/bin/python3 hardware/phat/make.py --check   make them afresh and compare

It writes cityunit-phat.kicad_pcb, .kicad_sch and .kicad_pro (the KiCad project: the
schematic is drawn from the same parts and nets as the board), phat.png, and in
fab/: the Gerbers and the drill file in one zip (what a fab's order form takes), bom.csv,
positions.csv (for an assembly service) and drc.rpt. It exits 1 when the design-rule
check finds anything (a violation, or a pad left unconnected), or with --check when a
file differs from the one made. KiCad stamps dates and random ids in its files: here
the ids are seeded and the dates left out, so that the same pinout makes the same bytes.
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import itertools
import re
import sys
import tempfile
import zipfile
from pathlib import Path

import pcbnew  # Debian's kicad package: the system's python3 only

sys.path.insert(0, str(Path(__file__).resolve().parent))
import board as spec
import picture
import route
import schematic

FOOTPRINTS = Path("/usr/share/kicad/footprints")
NAME = "cityunit-phat"
HERE = Path(__file__).resolve().parent
MADE = [f"{NAME}.kicad_pcb", f"{NAME}.kicad_sch", f"{NAME}.kicad_pro", "cityunit.kicad_sym",
        "sym-lib-table", "phat.png",
        f"fab/{NAME}-gerbers.zip", "fab/bom.csv", "fab/positions.csv", "fab/drc.rpt"]  # fmt: skip
PLOTTED = ("F_Cu", "B_Cu", "F_Silkscreen", "B_Silkscreen", "F_Mask", "B_Mask", "Edge_Cuts")
DATED = re.compile(r"^.*(CreationDate|Created on| date ).*\n", re.M)  # a stamp, not content
RULES = route.Rules()
VIA_DRILL = 0.4  # mm: every fab's standard
SILK_TEXT, SILK_STROKE = 1.0, 0.15  # mm: the least text a fab prints legibly
MM = pcbnew.FromMM


def point(x: float, y: float) -> pcbnew.wxPoint:
    return pcbnew.wxPoint(MM(x), MM(y))


def new_board() -> pcbnew.BOARD:
    """Two layers, the rules the router keeps to, and the outline: 65 x 30 mm with the
    Zero's rounded corners."""
    pcb = pcbnew.BOARD()
    pcb.SetCopperLayerCount(2)
    settings = pcb.GetDesignSettings()
    settings.m_MinClearance = MM(RULES.clearance)
    settings.m_TrackMinWidth = MM(RULES.track)
    settings.m_ViasMinSize = MM(RULES.via)
    settings.m_CopperEdgeClearance = MM(RULES.clearance)
    netclass = settings.GetNetClasses().GetDefaultPtr()
    netclass.SetClearance(MM(RULES.clearance))
    netclass.SetTrackWidth(MM(RULES.track))
    netclass.SetViaDiameter(MM(RULES.via))
    netclass.SetViaDrill(MM(VIA_DRILL))
    w, h, r = spec.WIDTH, spec.HEIGHT, spec.CORNER
    for a, b in (
        ((r, 0), (w - r, 0)),
        ((w, r), (w, h - r)),
        ((w - r, h), (r, h)),
        ((0, h - r), (0, r)),
    ):
        line = pcbnew.PCB_SHAPE(pcb)
        line.SetShape(pcbnew.SHAPE_T_SEGMENT)
        line.SetStart(point(*a))
        line.SetEnd(point(*b))
        line.SetLayer(pcbnew.Edge_Cuts)
        line.SetWidth(MM(0.1))
        pcb.Add(line)
    k = r * (1 - 0.5**0.5)  # an arc's middle, in from the corner
    corners = (
        ((0, r), (k, k), (r, 0)), ((w - r, 0), (w - k, k), (w, r)),
        ((w, h - r), (w - k, h - k), (w - r, h)), ((r, h), (k, h - k), (0, h - r)),
    )  # fmt: skip
    for start, mid, end in corners:
        arc = pcbnew.PCB_SHAPE(pcb)
        arc.SetShape(pcbnew.SHAPE_T_ARC)
        arc.SetArcGeometry(point(*start), point(*mid), point(*end))
        arc.SetLayer(pcbnew.Edge_Cuts)
        arc.SetWidth(MM(0.1))
        pcb.Add(arc)
    return pcb


def place(
    pcb: pcbnew.BOARD, part: spec.Part, nets: dict[str, pcbnew.NETINFO_ITEM]
) -> pcbnew.FOOTPRINT:
    library, name = part.footprint.split(":")
    fp = pcbnew.FootprintLoad(str(FOOTPRINTS / f"{library}.pretty"), name)
    fp.SetReference(part.ref)
    fp.SetValue(part.value)
    pcb.Add(fp)
    if part.back:
        fp.Flip(fp.GetPosition(), False)
    for pad in fp.Pads():
        net = part.nets.get(pad.GetNumber())
        if net:
            pad.SetNet(nets[net])
    if part.label:  # a connector: turned so that its pins run left to right, as the others'
        along_x(fp)
    first = next(p for p in fp.Pads() if p.GetNumber() == "1")
    offset = first.GetPosition() - fp.GetPosition()
    fp.SetPosition(point(part.x, part.y) - offset)
    for item in fp.GraphicalItems():  # the library's own texts ('K' by a diode): ours say it
        if isinstance(item, pcbnew.FP_TEXT):
            item.SetVisible(False)
    ref = fp.Reference()
    if part.label:  # a connector: its label says the reference too
        ref.SetVisible(False)
    elif not part.back:  # on the part's body, where no neighbour's outline is
        box = fp.GetBoundingBox(False, False)
        ref.SetPosition(
            box.Centre()
            if part.ref[0] in "RD"
            else pcbnew.wxPoint(box.Centre().x, box.GetBottom() + MM(0.8))
        )
        ref.SetTextSize(pcbnew.wxSize(MM(SILK_TEXT), MM(SILK_TEXT)))
        ref.SetTextThickness(MM(SILK_STROKE))
    return fp


def along_x(fp: pcbnew.FOOTPRINT) -> None:
    """The footprint turned so that its pad 2 is right of its pad 1 (a pin socket's are
    drawn downwards, JST's to the right)."""
    for degrees in (0, 90, 180, 270):
        fp.SetOrientationDegrees(degrees)
        pads = {p.GetNumber(): p.GetPosition() for p in fp.Pads()}
        step = pads["2"] - pads["1"]
        if step.x > 0 and abs(step.y) < 1000:
            return
    raise SystemExit(f"make.py: {fp.GetReference()} has no turn with its pins left to right")


def socket_orientation(pcb: pcbnew.BOARD, fp: pcbnew.FOOTPRINT) -> None:
    """The header socket turned until its pins sit where the Pi's do (pin 2 on the edge's
    row, pin 3 along it): the footprint is drawn upright and seen from its mating side."""
    for degrees in (0, 90, 180, 270):
        fp.SetOrientationDegrees(degrees)
        pads = {p.GetNumber(): p for p in fp.Pads()}
        at = {n: pads[n].GetPosition() - pads["1"].GetPosition() for n in ("2", "3")}
        want = {n: point(*spec.header_xy(int(n))) - point(*spec.header_xy(1)) for n in ("2", "3")}
        if all(abs(at[n].x - want[n].x) < 1000 and abs(at[n].y - want[n].y) < 1000 for n in at):
            offset = pads["1"].GetPosition() - fp.GetPosition()
            fp.SetPosition(point(*spec.header_xy(1)) - offset)
            return
    raise SystemExit("the header socket's footprint fits no turn of the Pi's header")


def router_pads(pcb: pcbnew.BOARD) -> list[route.Pad]:
    out = []
    for fp in pcb.GetFootprints():
        for pad in fp.Pads():
            box = pad.GetBoundingBox()
            c = pad.GetPosition()
            net = pad.GetNetname() or f"{fp.GetReference()}.{pad.GetNumber()}"  # its own
            size = pcbnew.ToMM(box.GetWidth()), pcbnew.ToMM(box.GetHeight())
            out.append(route.Pad(net, pcbnew.ToMM(c.x), pcbnew.ToMM(c.y), *size))
    return out


def lay(pcb: pcbnew.BOARD, routed: route.Routed, nets: dict[str, pcbnew.NETINFO_ITEM]) -> None:
    layers = (pcbnew.F_Cu, pcbnew.B_Cu)
    for track in routed.tracks:
        for a, b in itertools.pairwise(track.points):
            t = pcbnew.PCB_TRACK(pcb)
            t.SetStart(point(*a))
            t.SetEnd(point(*b))
            t.SetWidth(MM(RULES.track))
            t.SetLayer(layers[track.layer])
            t.SetNet(nets[track.net])
            pcb.Add(t)
    for net, x, y in routed.vias:
        v = pcbnew.PCB_VIA(pcb)
        v.SetPosition(point(x, y))
        v.SetWidth(MM(RULES.via))
        v.SetDrill(MM(VIA_DRILL))
        v.SetNet(nets[net])
        pcb.Add(v)


def silkscreen(pcb: pcbnew.BOARD, all_parts: list[spec.Part]) -> None:
    """What plugs in where, above each connector: its name, and each pin's, upright over
    the pin (outside the housing, seen once it is soldered); the board's name, revision
    and date."""

    def text(words: str, x: float, y: float, upright: bool = False) -> pcbnew.PCB_TEXT:
        t = pcbnew.PCB_TEXT(pcb)
        t.SetText(words)
        t.SetPosition(point(x, y))
        t.SetLayer(pcbnew.F_SilkS)
        t.SetTextSize(pcbnew.wxSize(MM(SILK_TEXT), MM(SILK_TEXT)))
        t.SetTextThickness(MM(SILK_STROKE))
        if upright:  # read from the board's right edge, its end towards the connector
            t.SetTextAngle(900)
            t.SetHorizJustify(pcbnew.GR_TEXT_HJUSTIFY_LEFT)
        pcb.Add(t)
        return t

    for part in all_parts:
        if part.label:
            fp = pcb.FindFootprintByReference(part.ref)
            top = pcbnew.ToMM(fp.GetBoundingBox(False, False).GetTop())
            pads = sorted(fp.Pads(), key=lambda pad: int(pad.GetNumber()))
            xs = [pcbnew.ToMM(pad.GetPosition().x) for pad in pads]
            names = [  # a sign stays level ("-" upright would read "|")
                text(n, x, top - 0.4 - (len(n) == 1) * 0.7, len(n) > 1)
                for x, n in zip(xs, part.pins.split(), strict=True)
            ]
            highest = min(pcbnew.ToMM(t.GetBoundingBox().GetTop()) for t in names)
            text(f"{part.ref} {part.label}", (xs[0] + xs[-1]) / 2, highest - 0.8)
    text(f"cityunit pHAT {spec.REVISION}", 51.0, 6.6)
    text(spec.DATE, 57.5, 22.5)


def small_text(pcb: pcbnew.BOARD) -> list[str]:
    """Every visible silkscreen text a fab would not print: under SILK_TEXT tall or
    SILK_STROKE wide (the usual fabs' least)."""
    texts = [item for item in pcb.GetDrawings() if isinstance(item, pcbnew.PCB_TEXT)]
    for fp in pcb.GetFootprints():
        texts += [fp.Reference(), fp.Value()]
        texts += [item for item in fp.GraphicalItems() if isinstance(item, pcbnew.FP_TEXT)]
    silk = (pcbnew.F_SilkS, pcbnew.B_SilkS)
    return [
        f"{t.GetShownText()!r} ({pcbnew.ToMM(t.GetTextHeight()):.2f} mm tall,"
        f" {pcbnew.ToMM(t.GetTextThickness()):.2f} mm stroke)"
        for t in texts
        if t.IsVisible() and t.GetLayer() in silk
        and (pcbnew.ToMM(t.GetTextHeight()) < SILK_TEXT - 1e-6
             or pcbnew.ToMM(t.GetTextThickness()) < SILK_STROKE - 1e-6)
    ]  # fmt: skip


def drc(pcb: pcbnew.BOARD, report: Path) -> tuple[int, int]:
    """KiCad's own design-rule check: (violations, unconnected pads). The report is written
    afresh: an old clean one left in place must never pass for this board's."""
    report.unlink(missing_ok=True)
    if not pcbnew.WriteDRCReport(pcb, str(report), pcbnew.EDA_UNITS_MILLIMETRES, True):
        raise SystemExit(f"make.py: KiCad's design-rule check wrote no report for {report}")
    text = report.read_text()
    violations = re.search(r"Found (\d+) DRC violations", text)
    unconnected = re.search(r"Found (\d+) unconnected", text)
    if violations is None or unconnected is None:
        raise SystemExit(f"make.py: a design-rule report this script cannot read: {report}")
    return int(violations[1]), int(unconnected[1])


def fab(pcb: pcbnew.BOARD, out: Path, all_parts: list[spec.Part]) -> None:
    """Gerbers and the drill file in a zip, the BOM and the placement file, as a fab and
    an assembly service ask for them."""
    with tempfile.TemporaryDirectory() as tmp:
        plot = pcbnew.PLOT_CONTROLLER(pcb)
        options = plot.GetPlotOptions()
        options.SetOutputDirectory(tmp)
        options.SetUseGerberProtelExtensions(True)
        options.SetCreateGerberJobFile(False)
        options.SetUseGerberX2format(False)
        options.SetIncludeGerberNetlistInfo(False)
        options.SetPlotFrameRef(False)
        options.SetSubtractMaskFromSilk(True)
        for suffix in PLOTTED:
            plot.SetLayer(getattr(pcbnew, suffix.replace("Silkscreen", "SilkS")))
            plot.OpenPlotfile(suffix, pcbnew.PLOT_FORMAT_GERBER, suffix)
            plot.PlotLayer()
        plot.ClosePlot()
        drill = pcbnew.EXCELLON_WRITER(pcb)
        # plated and non-plated holes in separate files, as fabs drill them
        drill.SetOptions(False, False, pcb.GetDesignSettings().GetAuxOrigin(), False)
        drill.SetFormat(True)
        drill.CreateDrillandMapFilesSet(tmp, True, False)
        with zipfile.ZipFile(out / f"{NAME}-gerbers.zip", "w", zipfile.ZIP_DEFLATED) as z:
            for made in sorted(Path(tmp).iterdir()):
                member = zipfile.ZipInfo(made.name, date_time=(2026, 1, 1, 0, 0, 0))
                z.writestr(member, DATED.sub("", made.read_text()), zipfile.ZIP_DEFLATED)
    with (out / "bom.csv").open("w", newline="") as f:
        rows = csv.writer(f)
        rows.writerow(["refs", "qty", "part", "footprint"])
        groups: dict[tuple[str, str], list[str]] = {}
        for part in all_parts:
            groups.setdefault((part.order, part.footprint), []).append(part.ref)
        for (order, footprint), refs in sorted(groups.items(), key=lambda g: g[1][0]):
            rows.writerow([" ".join(refs), len(refs), order, footprint.split(":")[1]])
    with (out / "positions.csv").open("w", newline="") as f:
        rows = csv.writer(f)
        rows.writerow(["ref", "value", "x_mm", "y_mm", "rotation", "side"])
        for fp in sorted(pcb.GetFootprints(), key=lambda fp: fp.GetReference()):
            if fp.GetReference().startswith("H"):
                continue  # holes: nothing to place
            c = pads_centre(fp)  # where a machine picks it up: its middle, not its pad 1
            rows.writerow([fp.GetReference(), fp.GetValue(), f"{pcbnew.ToMM(c.x):.3f}",
                           f"{-pcbnew.ToMM(c.y):.3f}", f"{fp.GetOrientationDegrees():.1f}",
                           "bottom" if fp.IsFlipped() else "top"])  # fmt: skip


def pads_centre(fp: pcbnew.FOOTPRINT) -> pcbnew.wxPoint:
    box = fp.Pads()[0].GetBoundingBox()
    for pad in fp.Pads()[1:]:
        box.Merge(pad.GetBoundingBox())
    return box.Centre()


def make(out: Path) -> tuple[int, int, route.Routed]:
    """Every file into `out` (and out/fab): the DRC's violations and unconnected pads."""
    (out / "fab").mkdir(parents=True, exist_ok=True)
    # every item's id, which orders them in the file: the same each run
    pcbnew.KIID.SeedGenerator(24)
    legs = spec.transistor()["legs"]
    all_parts = spec.parts()
    pcb = new_board()
    nets = {}
    for name in sorted({n for part in all_parts for n in part.nets.values()}):
        nets[name] = pcbnew.NETINFO_ITEM(pcb, name)
        pcb.Add(nets[name])
    for part in all_parts:
        fp = place(pcb, part, nets)
        if part.back:
            socket_orientation(pcb, fp)
    holes = []
    for n, (x, y) in enumerate(spec.HOLES, 1):
        hole = pcbnew.FootprintLoad(
            str(FOOTPRINTS / "MountingHole.pretty"), "MountingHole_2.7mm_M2.5"
        )
        hole.SetReference(f"H{n}")
        hole.Reference().SetVisible(False)
        hole.SetPosition(point(x, y))
        pcb.Add(hole)
        holes.append((x, y, spec.HOLE_KEEPOUT))
    routed = route.route(
        spec.WIDTH, spec.HEIGHT, router_pads(pcb), holes, spec.nets(all_parts), RULES
    )
    lay(pcb, routed, nets)
    silkscreen(pcb, all_parts)
    path = out / f"{NAME}.kicad_pcb"
    pcb.Save(str(path))
    (out / f"{NAME}.kicad_prl").unlink(missing_ok=True)  # the editor's window state
    saved = pcbnew.LoadBoard(str(path))  # as KiCad reads it: what is checked is what ships
    report = out / "fab" / "drc.rpt"
    violations, unconnected = drc(saved, report)
    if small := small_text(saved):
        raise SystemExit(f"make.py: text too small for a fab to print: {', '.join(small)}")
    report.write_text(DATED.sub("", report.read_text()).replace(str(path), path.name))
    fab(saved, out / "fab", all_parts)
    picture.draw(saved, out / "phat.png", spec.WIDTH, spec.HEIGHT, spec.CORNER)
    sheet = schematic.schematic(all_parts, legs, "cityunit pHAT")
    (out / f"{NAME}.kicad_sch").write_text(sheet)
    (out / "cityunit.kicad_sym").write_text(schematic.library(all_parts, legs))
    (out / "sym-lib-table").write_text(schematic.LIBRARY_TABLE)
    return violations, unconnected, routed


def main() -> int:
    if not pcbnew.Version().startswith("6."):  # its API changed in 7 (wxPoint, FP_TEXT...)
        sys.exit(f"make.py: needs KiCad 6 (Debian 12's kicad); this is KiCad {pcbnew.Version()}")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="make afresh and compare")
    check = parser.parse_args().check
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) if check else HERE
        violations, unconnected, routed = make(out)
        print(f"{NAME}: {len(routed.tracks)} tracks, {len(routed.vias)} vias; design-rule check:"
              f" {violations} violations, {unconnected} unconnected pads")  # fmt: skip
        stale = [name for name in MADE if check and not _same(out / name, HERE / name)]
    for name in stale:
        print(f"{HERE.name}/{name} is not what pinout.toml makes: run hardware/phat/make.py")
    return 1 if violations or unconnected or stale else 0


def _same(made: Path, kept: Path) -> bool:
    """Byte for byte (the zip too: its members' order and dates are fixed)."""
    return kept.exists() and filecmp.cmp(made, kept, shallow=False)


if __name__ == "__main__":
    raise SystemExit(main())
