// cityunit: a round case for the unit, in the spirit of the original.
// Holds a Raspberry Pi Zero / Zero W / Zero 2 W (or a Pi 3 Model A+), a 0.96" or 1.3" I2C
// OLED, two 16 mm push buttons, a 5 mm LED, a 12 mm buzzer and a mini toggle switch.
// Print the base and the lid separately; hardware/enclosure/make.py writes their STLs.
// The parts are modelled as the room they take (wires included): tests/build/test_case.py
// renders them in place and fails on any overlap.

part = "view";    // "base", "lid", "view" (case.png), "parts" (in place), or the tests'
                  // "clash", "uncovered", "posts", "fit" and "window" (two checks at once)
pi = "zero";      // "zero" (Zero, Zero W, Zero 2 W) or "3a+" (3 Model A+)
oled = "0.96";    // "0.96" (SSD1306) or "1.3" (SH1106), 4-pin I2C modules; the 2.42"
                  // SSD1309 and 7-pin SPI modules need a lid of their own (not drawn)
board = "wires";  // "wires" (jumper wires on the Pi's header) or "phat" (hardware/phat on
                  // it, a Zero's only: the base is taller, for its connectors and cables)
assert(pi == "zero" || pi == "3a+", str("pi must be \"zero\" or \"3a+\", not ", pi));
assert(board == "wires" || board == "phat", str("board must be \"wires\" or \"phat\", not ", board));
assert(board == "wires" || pi == "zero", "the pHAT is a Pi Zero's (65 x 30 mm)");
assert(oled == "0.96" || oled == "1.3", str("oled must be \"0.96\" or \"1.3\", not ", oled));

diameter = 110;   // outside, mm
// base, outside: the tallest part inside is the Pi with jumper wires, or with the pHAT
// (which reaches under the buttons: they need 25 mm above it)
height = board == "phat" ? 63 : 40;
wall = 2.4;
floor_t = 2.4;
lid_t = 3;
lip = 3;          // the lid's locating lip
clearance = 0.3;
seat = 0.01;      // parts rest this far off the surface they sit on: touching counts as a clash

$fn = 48;         // small round features (the tests lower it)
fn_big = 96;      // the walls: fixed, so that a part against a wall is checked as printed
r = diameter / 2;
lid_z = height + seat;   // the lid's underside, closed
r_in = r - wall;

// --- the Pi ----------------------------------------------------------------------------
// From the Raspberry Pi mechanical drawings. Board coordinates: x along the port edge from
// the SD card end, y in from the port edge, z up from the top of the board.
// [size, holes, power port x, [x, y, w, d, h] on top, the same underneath, header row y]
PI_ZERO = [[65, 30], [[3.5, 3.5], [61.5, 3.5], [3.5, 26.5], [61.5, 26.5]], 54,
    [[6.8, -0.5, 11.2, 7.6, 3.3],      // mini HDMI at 12.4
     [37.4, -1, 8, 5.6, 3],           // micro USB (data) at 41.4
     [50, -1, 8, 5.6, 3],             // micro USB (power) at 54
     [-2, 10.9, 13.5, 12, 1.4],       // microSD card, standing 2 mm out
     [61, 6.5, 5, 17, 1.2]],          // camera connector
    [], 26.5];
PI_3AP = [[65, 56], [[3.5, 3.5], [61.5, 3.5], [3.5, 52.5], [61.5, 52.5]], 10.6,
    [[6.6, -1, 8, 5.6, 3],            // micro USB (power) at 10.6
     [24.5, -1.5, 15, 11.5, 6.5],     // HDMI at 32
     [50, -2.5, 7, 15, 6],            // audio jack at 53.5
     [50, 22.4, 17.5, 13.2, 7.2],     // USB A, 2.5 mm over the edge
     [1.5, 17, 4.5, 22, 5.5],         // display connector
     [34, 9, 22, 5, 5.5],             // camera connector
     [20, 24.4, 14, 14, 1.2]],        // SoC
    [[-2.5, 22, 14, 12, 1.5]],        // microSD card, underneath
    52.5];
P = pi == "3a+" ? PI_3AP : PI_ZERO;
pcb_t = 1.4;
standoff_h = 4;                       // clears the header's solder tails
pi_at = [-P[0][0] / 2, -38, floor_t + standoff_h + pcb_t];  // the port edge near the wall
plug = [12, 20, 8.5];                 // a micro-USB plug's moulding, w x length x h
plug_z = pi_at[2] + 1.4;              // the port's axis
opening = [plug[0] + 1, plug[2] + 1]; // the cable opening, w x h
power_x = pi_at[0] + P[2];

// --- the lid's parts -------------------------------------------------------------------
// [pcb w, pcb h, pcb t, hole dx, hole dy, glass w, glass h, glass t, active w, active h,
//  active area's centre above the pcb's centre, header row below the pcb's top edge]
function oled_dims(kind) = kind == "1.3"
    ? [35.4, 33.5, 1.6, 30.4, 28.5, 34.5, 23.0, 1.6, 29.42, 14.70, 1.5, 1.8]
    : [27.3, 27.8, 1.2, 23.5, 23.8, 26.7, 19.26, 1.42, 21.74, 10.86, 1.5, 1.8];
O = oled_dims(oled);
oled_y = 14;           // the module's centre; its pins towards the LED
glass_gap = 0.3;       // between the glass and the lid: close, so the window can be small
margin = 1;            // the window over the active area, each side: a module's tolerance
post_d = 3.8;          // OLED posts: M2 self-tapping, cut back from the glass:
glass_tolerance = 0.6; // a module's glass may sit this far off its place on the board
glass_shift = [0, 0];  // the tests' probe: the glass moved by this much
oled_front = -(glass_gap + O[7]);    // the module's board, front face, lid coordinates

button_d = 16.2;       // panel hole for a 16 mm push button
buttons = [[-25, -26], [25, -26]];   // AUCTION left, BUILD right
button_depth = 25;     // a button's body and tags under the lid: check yours
led_at = [0, 38];
led_d = 5.2;
buzzer_at = [0, -40];
buzzer = [12, 8.5];    // 12085 passive buzzer: diameter, height
switch_z = 22;         // the toggle's bushing axis, in the -x wall
switch_body = [10, 8, 13];          // MTS-102: depth x width x height behind the wall
switch_hole = 6.4;     // M6 (or 1/4") bushing
bosses = [100, 210, 330];           // lid screws (M3); uneven, so the lid fits one way
boss_r = r - wall - 3.5;            // overlaps the wall by 0.5 mm

module disc(radius, h) cylinder(r = radius, h = h, $fn = fn_big);

module box(b) translate([b[0], b[1], 0]) cube([b[2], b[3], b[4]]);

module rounded_square(size, radius) {
    offset(r = radius) square([size[0] - 2 * radius, size[1] - 2 * radius], center = true);
}

module on_pi() translate(pi_at) children();

module base() {
    difference() {
        union() {
            difference() {
                disc(r, height);
                translate([0, 0, floor_t]) disc(r_in, height);
            }
            on_pi() for (h = P[1]) translate([h[0], h[1], -pcb_t - standoff_h - 1])
                cylinder(h = standoff_h + 1, d = 5.5);
            for (a = bosses) rotate(a) translate([boss_r, 0, 0]) cylinder(h = height, d = 8);
        }
        // M2.5 x 6 self-tapping: 1 mm into the floor
        on_pi() for (h = P[1]) translate([h[0], h[1], -pcb_t - 5]) cylinder(h = 6, d = 2.2);
        for (a = bosses) rotate(a) translate([boss_r, 0, floor_t + 2]) cylinder(h = height, d = 2.6);
        // the power cable, straight out of the port through the wall
        translate([power_x - opening[0] / 2, -r - 1, plug_z - opening[1] / 2])
            cube([opening[0], r + 1 + pi_at[1] - 2, opening[1]]);
        // the toggle switch, in the side wall: underneath, its lever would rock the unit
        translate([-r - 1, 0, switch_z]) rotate([0, 90, 0]) cylinder(h = wall + 2, d = switch_hole);
    }
}

// The window: the active area and its margin at the underside, opening out at 45 degrees
// above it so that players around the table see the edges.
module window() {
    a = [O[8] + 2 * margin, O[9] + 2 * margin];
    translate([0, oled_y + O[10], 0]) {
        translate([0, 0, -1]) linear_extrude(1.7) rounded_square(a, 0.5);
        hull() {
            translate([0, 0, 0.6]) linear_extrude(0.01) rounded_square(a, 0.5);
            translate([0, 0, lid_t + 0.01]) linear_extrude(0.01)
                rounded_square(a + 2 * [lid_t - 0.6, lid_t - 0.6], 0.5);
        }
    }
}

module lid() {
    difference() {
        union() {
            disc(r, lid_t);
            translate([0, 0, -lip]) difference() {
                disc(r_in - clearance, lip + 0.5);
                translate([0, 0, -1]) disc(r_in - wall - clearance, lip + 2);
                for (a = bosses) rotate(a) translate([boss_r, 0, -1]) cylinder(h = lip + 2, d = 8 + 1);
            }
            difference() {  // the posts, clear of the glass wherever it sits within tolerance
                for (dx = [-O[3] / 2, O[3] / 2], dy = [-O[4] / 2, O[4] / 2])
                    translate([dx, oled_y + dy, oled_front + seat]) cylinder(h = -oled_front, d = post_d);
                translate([0, oled_y, oled_front / 2])
                    cube([O[5] + 2 * glass_tolerance, O[6] + 2 * glass_tolerance, -oled_front + 2], center = true);
            }
            // a ring around the LED: its flange stops against it
            translate([led_at[0], led_at[1], -3]) cylinder(h = 3.5, d = led_d + 3);
            // a cup that holds the buzzer (a drop of glue keeps it)
            translate([buzzer_at[0], buzzer_at[1], -7]) cylinder(h = 7.5, d = buzzer[0] + 0.4 + 2.4);
        }
        window();
        // room for the OLED header's solder tails on the module's face
        translate([0, oled_y + O[1] / 2 - O[11], 0]) cube([13, 4.5, 3], center = true);
        for (b = buttons) translate([b[0], b[1], -1]) cylinder(h = lid_t + 2, d = button_d);
        translate([led_at[0], led_at[1], -4]) cylinder(h = lid_t + 5, d = led_d);
        translate([buzzer_at[0], buzzer_at[1], -8]) cylinder(h = 8, d = buzzer[0] + 0.4);
        for (a = [0 : 60 : 359]) translate([buzzer_at[0], buzzer_at[1], -1]) rotate(a)
            translate([3.5, 0, 0]) cylinder(h = lid_t + 2, d = 2);
        translate([buzzer_at[0], buzzer_at[1], -1]) cylinder(h = lid_t + 2, d = 2);
        for (a = bosses) rotate(a) translate([boss_r, 0, -1]) cylinder(h = lid_t + 2, d = 3.3);
        // M2 x 4 self-tapping through the module into its posts
        for (dx = [-O[3] / 2, O[3] / 2], dy = [-O[4] / 2, O[4] / 2])
            translate([dx, oled_y + dy, oled_front - 1]) cylinder(h = 1 + 2.5 - oled_front, d = 1.7);
    }
}

// --- the parts, in case coordinates ----------------------------------------------------

module pi_board() translate([0, 0, seat]) on_pi() {
    color("darkgreen") translate([0, 0, -pcb_t]) linear_extrude(pcb_t)
        translate(P[0] / 2) rounded_square(P[0], 3);
    color("silver") for (b = P[3]) box(b);
    for (b = P[4]) translate([0, 0, -pcb_t - b[4]]) box(b);
    // the 2 x 20 header: solder tails below, jumper housings and their wires' bend above
    translate([7.1, P[5] - 2.6, -pcb_t - 3]) cube([50.8, 5.2, 3]);
    if (board == "wires")
        color("black", 0.4) translate([7.1, P[5] - 2.6, 0]) cube([50.8, 5.2, 2.5 + 14 + 5]);
    else phat();
    // the power plug and its cable
    color("dimgray") {
        translate([P[2] - plug[0] / 2, -1.5 - plug[1], 1.4 - plug[2] / 2]) cube(plug);
        translate([P[2], -1.5 - plug[1], 1.4]) rotate([90, 0, 0]) cylinder(h = 20, d = 4);
    }
}

// the pHAT on the header: an 8.5 mm socket on the header's 2.5 mm plastic, the board
// (the Zero's outline), and its JST-XH headers with their plugs and cables bending above
phat_z = 2.5 + 8.5;
phat_room = 7 + 3 + 6;   // a header 7 mm, its plug 3 mm more, the cables' bend 6 mm
module phat() {
    translate([7.1, P[5] - 2.6, 2.5]) cube([50.8, 5.2, 8.5]);
    translate([0, 0, phat_z]) linear_extrude(1.6) translate(P[0] / 2) rounded_square(P[0], 3);
    color("black", 0.4) translate([3, 0.5, phat_z + 1.6]) cube([P[0][0] - 6, 24, phat_room]);
}

module oled_module() translate([0, oled_y, lid_z]) {
    translate([glass_shift[0], glass_shift[1], -glass_gap - O[7]]) linear_extrude(O[7])
        square([O[5], O[6]], center = true);
    translate([0, 0, oled_front - O[2]]) difference() {
        linear_extrude(O[2]) square([O[0], O[1]], center = true);
        for (dx = [-O[3] / 2, O[3] / 2], dy = [-O[4] / 2, O[4] / 2])
            translate([dx, dy, -1]) cylinder(h = O[2] + 2, d = 2.2);
    }
    // parts on the back, and the header: tails in front, jumpers behind
    translate([0, 0, oled_front - O[2] - 2]) linear_extrude(2)
        square([O[0] - 2 * 4, O[1] - 2 * 4], center = true);
    translate([0, O[1] / 2 - O[11], 0]) {
        translate([0, 0, oled_front + 1.25]) cube([10.4, 2.8, 2.5], center = true);
        translate([0, 0, oled_front - O[2] - 21.5 / 2]) cube([10.4, 2.8, 21.5], center = true);
    }
}

module active_area() translate([0, oled_y + O[10], lid_z - glass_gap])
    linear_extrude(glass_gap + lid_t + 1) square(aa, center = true);

// a band of the lid's underside around the active area and m beyond, that must be solid
module window_frame(m) translate([0, oled_y + O[10], lid_z + 0.05]) linear_extrude(0.5)
    difference() {
        square(aa + 2 * [m + 1, m + 1], center = true);
        square(aa + 2 * [m, m], center = true);
    }

module button(b) translate([b[0], b[1], lid_z]) {
    translate([0, 0, lid_t + seat]) cylinder(h = 3, d = 19);
    translate([0, 0, -button_depth]) cylinder(h = button_depth + lid_t, d = 16);
    translate([0, 0, -seat - 3]) cylinder(h = 3, d = 22);      // its nut
}

module toggle() {
    face = -sqrt(r_in * r_in - switch_body[1] * switch_body[1] / 4) + 0.05;
    translate([face, 0, switch_z]) {
        translate([0, -switch_body[1] / 2, -switch_body[2] / 2]) cube(switch_body);
        translate([switch_body[0], -3, -4]) cube([12, 6, 8]);  // lugs and wires
        rotate([0, -90, 0]) cylinder(h = 9, d = 6);            // bushing
        translate([-r - face, 0, 0]) rotate([0, -90, 0]) {    // nut, lever
            translate([0, 0, seat]) cylinder(h = 2, d = 11);
            cylinder(h = 20, d = 3);
        }
    }
}

module buzzer_part() translate([buzzer_at[0], buzzer_at[1], lid_z - seat]) {
    translate([0, 0, -buzzer[1]]) cylinder(h = buzzer[1], d = buzzer[0]);
    translate([0, 0, -buzzer[1] - 10]) cylinder(h = 10, d = 7);  // pins and wires
}

module led() translate([led_at[0], led_at[1], lid_z - 3 - seat]) {
    translate([0, 0, -1]) cylinder(h = 1, d = 5.8);   // flange
    cylinder(h = 7.6, d = 5);
    translate([0, 0, -21]) cylinder(h = 20, d = 6);   // legs, resistor, wires
}

LID_PARTS = ["oled", "auction", "build", "buzzer", "led"];
PARTS = concat(["pi", "switch"], LID_PARTS);

module thing(name, drop = 0) {
    if (name == "base") base();
    else if (name == "lid") translate([0, 0, lid_z - drop]) lid();
    else if (name == "pi") pi_board();
    else if (name == "switch") toggle();
    else translate([0, 0, -drop]) {
        if (name == "oled") oled_module();
        else if (name == "auction") button(buttons[0]);
        else if (name == "build") button(buttons[1]);
        else if (name == "buzzer") buzzer_part();
        else if (name == "led") led();
        else if (name == "active area") active_area();
        else if (name == "window frame") window_frame(frame_margin);
        else assert(false, str("no such thing: ", name));
    }
}

// The tests' probes: a and b are lists of things; drop lowers the lid and its parts; aa is
// the display's active area; frame_margin the most the window may show beyond it.
a = [];
b = [];
drop = 0;
aa = [O[8], O[9]];
frame_margin = 1.5;
pairs = true;       // clash: a's pairs too, or only a against b
FAR = 1000;         // the checks a test renders at once stand this far apart, in z
module things(names, d = drop) for (n = names) thing(n, d);
// where any two of a overlap (with pairs), and any of a with b: empty if all fit
module clash(a, b, d = drop, pairs = pairs) for (i = [0 : len(a) - 1]) {
    if (pairs) for (j = [i + 1 : 1 : len(a) - 1]) intersection() { thing(a[i], d); thing(a[j], d); }
    if (b != []) intersection() { thing(a[i], d); things(b, d); }
}
module uncovered(a, b) difference() { union() things(a); union() things(b); }

if (part == "base") base();
else if (part == "lid") translate([0, 0, lid_t]) rotate([180, 0, 0]) lid();
else if (part == "parts") things(PARTS);
else if (part == "clash") clash(a, b);
else if (part == "uncovered") uncovered(a, b);
else if (part == "fit") {  // nothing overlaps; below, the lid's side 1 mm lower clears the base's
    clash(concat(["base", "lid"], PARTS), []);
    translate([0, 0, -FAR]) clash(concat(["lid"], LID_PARTS), ["pi", "switch"], 1, false);
} else if (part == "window") {  // the lid hides none of aa; below, shows no more than the frame
    clash(["active area"], ["lid"]);
    translate([0, 0, -FAR]) uncovered(["window frame"], ["lid"]);
}
else if (part == "posts") {   // the standoffs and the bosses alone: each its own shell
    intersection() { base(); translate([0, 0, floor_t + 0.5]) disc(r_in - 0.1, height); }
} else {
    // the base with the Pi and the switch; beside it the lid with its parts
    color("gainsboro") base();
    pi_board();
    color("dimgray") toggle();
    translate([diameter + 10, 0, -height]) {
        color("firebrick") thing("lid");
        color("dimgray") for (n = LID_PARTS) thing(n);
    }
}
