"""A small maze router for the pHAT: two copper layers on a 0.25 mm grid, each net's pads
joined one by one by the cheapest path (Dijkstra: straight, 45 degrees, a via between
layers), every path then kept clear of the nets routed after it.

KiCad 6's Python API places and checks a board but has no router, and the pHAT must be
made again by a script whenever pinout.toml moves a pin: so the script routes it. A
board this small (a dozen nets, through-hole parts) needs no rip-up: nets are tried in
an order, and the next order when one fails. Pure Python, no KiCad: tests run it alone.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

GRID = 0.25  # mm a cell
LAYERS = 2  # 0: front copper, 1: back


@dataclass(frozen=True)
class Pad:
    """A pad's copper: a rectangle (w x h, mm) centred at (x, y), on both layers (through
    hole) unless `layers` says otherwise."""

    net: str
    x: float
    y: float
    w: float
    h: float
    layers: tuple[int, ...] = (0, 1)


@dataclass(frozen=True)
class Rules:
    track: float = 0.3  # mm wide
    clearance: float = 0.2  # mm between copper of two nets, and from the board's edge
    via: float = 0.8  # mm across its copper (hole 0.4)
    via_cost: float = 12.0  # a via costs as much as 3 mm of track
    turn_cost: float = 0.6  # straight tracks are shorter to check by eye and to solder near


@dataclass
class Track:
    net: str
    layer: int
    points: list[tuple[float, float]]  # mm, a polyline


@dataclass
class Routed:
    tracks: list[Track] = field(default_factory=list)
    vias: list[tuple[str, float, float]] = field(default_factory=list)


class Unroutable(Exception):
    """A net the grid has no path for, in this order of nets."""


STEPS = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)]


class Grid:
    """Which net owns each cell's surroundings on each layer: a cell is free for a net's
    track when no other net's copper is within the clearance of that track's edge."""

    def __init__(self, width: float, height: float, rules: Rules) -> None:
        self.rules = rules
        self.nx, self.ny = round(width / GRID) + 1, round(height / GRID) + 1
        self.owner: list[dict[tuple[int, int], str]] = [{} for _ in range(LAYERS)]
        edge = rules.clearance + rules.track / 2
        margin = math.ceil(edge / GRID - 1e-9)
        self.inside = (margin, margin, self.nx - 1 - margin, self.ny - 1 - margin)

    def cell(self, x: float, y: float) -> tuple[int, int]:
        return round(x / GRID), round(y / GRID)

    def block_rect(self, net: str, layer: int, x0: float, y0: float, x1: float, y1: float) -> None:
        """Copper of `net` over a rectangle: cells whose track would come too near it are
        the net's own (other nets keep out)."""
        reach = self.rules.clearance + self.rules.track / 2
        for i in range(math.floor((x0 - reach) / GRID), math.ceil((x1 + reach) / GRID) + 1):
            for j in range(math.floor((y0 - reach) / GRID), math.ceil((y1 + reach) / GRID) + 1):
                dx = max(x0 - i * GRID, 0.0, i * GRID - x1)
                dy = max(y0 - j * GRID, 0.0, j * GRID - y1)
                if math.hypot(dx, dy) < reach - 1e-9:
                    self._own(layer, (i, j), net)

    def block_disc(self, net: str, layer: int, x: float, y: float, r: float) -> None:
        reach = self.rules.clearance + self.rules.track / 2 + r
        ci, cj = self.cell(x, y)
        n = math.ceil(reach / GRID)
        for i in range(ci - n, ci + n + 1):
            for j in range(cj - n, cj + n + 1):
                if math.hypot(i * GRID - x, j * GRID - y) < reach - 1e-9:
                    self._own(layer, (i, j), net)

    def _own(self, layer: int, c: tuple[int, int], net: str) -> None:
        had = self.owner[layer].get(c)
        self.owner[layer][c] = net if had in (None, net) else "*"  # "*": two nets: nobody's

    def free(self, layer: int, c: tuple[int, int], net: str) -> bool:
        x0, y0, x1, y1 = self.inside
        if not (x0 <= c[0] <= x1 and y0 <= c[1] <= y1):
            return False
        return self.owner[layer].get(c, net) == net

    def via_fits(self, c: tuple[int, int], net: str) -> bool:
        """A via's copper is wider than a track: its cell and the ring around it free."""
        n = math.ceil((self.rules.via - self.rules.track) / 2 / GRID)
        return all(
            self.free(layer, (c[0] + i, c[1] + j), net)
            for layer in range(LAYERS)
            for i in range(-n, n + 1)
            for j in range(-n, n + 1)
        )


def route(
    width: float, height: float, pads: Sequence[Pad], holes: Iterable[tuple[float, float, float]],
    nets: Sequence[str], rules: Rules = Rules(),
) -> Routed:  # fmt: skip
    """Every net in `nets` joined, in the first order of them that routes (the given
    order, then each rotation of it); Unroutable if none does."""
    holes = list(holes)
    failed: Unroutable | None = None
    for k in range(len(nets)):
        order = list(nets[k:]) + list(nets[:k])
        try:
            return _route_in_order(width, height, pads, holes, order, rules)
        except Unroutable as e:
            failed = failed or e
    raise failed or Unroutable("no nets")


def _route_in_order(
    width: float, height: float, pads: Sequence[Pad], holes: list[tuple[float, float, float]],
    nets: list[str], rules: Rules,
) -> Routed:  # fmt: skip
    grid = Grid(width, height, rules)
    for pad in pads:
        for layer in pad.layers:
            grid.block_rect(pad.net, layer, pad.x - pad.w / 2, pad.y - pad.h / 2,
                            pad.x + pad.w / 2, pad.y + pad.h / 2)  # fmt: skip
    for x, y, r in holes:
        for layer in range(LAYERS):
            grid.block_disc("*", layer, x, y, r)
    out = Routed()
    for net in nets:
        members = [p for p in pads if p.net == net]
        tree = {(layer, grid.cell(p.x, p.y)) for p in members[:1] for layer in p.layers}
        for pad in _nearest_first(members):
            goal = {(layer, grid.cell(pad.x, pad.y)) for layer in pad.layers}
            if goal & tree:
                continue
            path = _search(grid, net, tree, goal)
            if path is None:
                raise Unroutable(f"no path for {net} to the pad at ({pad.x:.2f}, {pad.y:.2f})")
            tree |= set(path)
            _lay(grid, out, net, path)
    return out


def _nearest_first(members: list[Pad]) -> list[Pad]:
    """The pads in the order a tree grows best: each next the nearest to those before."""
    if not members:
        return []
    done, left = [members[0]], members[1:]
    while left:
        nxt = min(left, key=lambda p: min(math.dist((p.x, p.y), (q.x, q.y)) for q in done))
        done.append(nxt)
        left.remove(nxt)
    return done[1:]


Node = tuple[int, tuple[int, int]]


def _search(grid: Grid, net: str, tree: set[Node], goal: set[Node]) -> list[Node] | None:
    """The cheapest path from the tree to the goal (Dijkstra on cells, layers and the
    direction of arrival), or None."""
    rules = grid.rules
    counter = itertools.count()
    frontier: list[tuple[float, int, Node, int]] = []
    best: dict[tuple[Node, int], float] = {}
    came: dict[tuple[Node, int], tuple[Node, int] | None] = {}
    closed: set[tuple[Node, int]] = set()
    targets = [c for _, c in goal]

    def guess(c: tuple[int, int]) -> float:  # A*: the octile distance, never too much
        return min(
            max(abs(c[0] - t[0]), abs(c[1] - t[1]))
            + 0.4142 * min(abs(c[0] - t[0]), abs(c[1] - t[1]))
            for t in targets
        )

    for node in tree:
        best[(node, -1)] = 0.0
        came[(node, -1)] = None
        heapq.heappush(frontier, (guess(node[1]), next(counter), node, -1))
    while frontier:
        _, _, node, heading = heapq.heappop(frontier)
        if (node, heading) in closed:
            continue
        closed.add((node, heading))
        cost = best[(node, heading)]
        if node in goal:
            return _back(came, (node, heading))
        layer, (i, j) = node
        moves: list[tuple[Node, int, float]] = []
        for d, (di, dj) in enumerate(STEPS):
            c = (i + di, j + dj)
            if grid.free(layer, c, net) and (
                not di or not dj or _corner_free(grid, layer, i, j, di, dj, net)
            ):
                step = 1.0 if not di or not dj else math.sqrt(2)
                moves.append(
                    ((layer, c), d, step + (rules.turn_cost if heading not in (-1, d) else 0))
                )
        if grid.via_fits((i, j), net):
            moves.append(((1 - layer, (i, j)), -1, rules.via_cost))
        for nxt, d, step in moves:
            key = (nxt, d)
            if cost + step < best.get(key, math.inf):
                best[key] = cost + step
                came[key] = (node, heading)
                heapq.heappush(frontier, (cost + step + guess(nxt[1]), next(counter), nxt, d))
    return None


def _corner_free(grid: Grid, layer: int, i: int, j: int, di: int, dj: int, net: str) -> bool:
    """A diagonal step passes between two cells: both must be free too."""
    return grid.free(layer, (i + di, j), net) and grid.free(layer, (i, j + dj), net)


def _back(
    came: dict[tuple[Node, int], tuple[Node, int] | None], key: tuple[Node, int]
) -> list[Node]:
    path = []
    at: tuple[Node, int] | None = key
    while at is not None:
        path.append(at[0])
        at = came[at]
    return path[::-1]


def _lay(grid: Grid, out: Routed, net: str, path: list[Node]) -> None:
    """The path as tracks (one polyline a layer change) and vias, and its copper kept
    clear of the nets after."""
    runs: list[list[Node]] = [[path[0]]]
    for node in path[1:]:
        if node[0] != runs[-1][-1][0]:
            x, y = node[1][0] * GRID, node[1][1] * GRID
            out.vias.append((net, x, y))
            for layer in range(LAYERS):
                grid.block_disc(net, layer, x, y, grid.rules.via / 2)
            runs.append([node])
        else:
            runs[-1].append(node)
    for run in runs:
        points = [(c[0] * GRID, c[1] * GRID) for _, c in _corners(run)]
        if len(points) > 1:
            out.tracks.append(Track(net, run[0][0], points))
        for _, (i, j) in run:
            grid.block_disc(net, run[0][0], i * GRID, j * GRID, grid.rules.track / 2)


def _corners(run: list[Node]) -> list[Node]:
    """A run of cells reduced to where its direction changes."""
    if len(run) < 3:
        return run
    kept = [run[0]]
    for a, b, c in zip(run, run[1:], run[2:], strict=False):
        if (b[1][0] - a[1][0], b[1][1] - a[1][1]) != (c[1][0] - b[1][0], c[1][1] - b[1][1]):
            kept.append(b)
    kept.append(run[-1])
    return kept
