// cityunit: a round case for the unit, in the spirit of the original.
// Sized for a Raspberry Pi Zero 2 W, a 0.96" or 1.3" I2C OLED, two 16 mm buttons,
// a 5 mm LED, a 12 mm buzzer, and the ON/OFF slide switch underneath (as on the
// original). Print the base and the lid separately: `part = "base"` or `"lid"`.
// Render: openscad -D 'part="view"' -o case.png cityunit.scad

part = "view";            // "base", "lid" or "view" (both, lid lifted)

diameter = 110;           // outside, mm
height = 30;              // base, outside, mm
wall = 2.4;
floor_t = 2.4;
lid_t = 3;
lip = 3;                  // the lid's locating lip
clearance = 0.3;

oled = "0.96";            // "0.96" (SSD1306) or "1.3" (SH1106)
button_d = 16.2;          // panel hole for a 16 mm push button
led_d = 5.2;
buzzer_d = 12;
switch_slot = [9, 4.5];   // SS12D00 actuator, underneath
screws = 3;               // M3 lid screws into bosses

// [pcb w, pcb h, window w, window h, window offset from the pcb centre (y), hole dx, hole dy]
function oled_dims(kind) = kind == "1.3"
    ? [35.4, 33.5, 30, 15.5, 1.5, 30.4, 28.5]
    : [27.3, 27.8, 22.5, 11.5, 1.5, 23.5, 23.8];
O = oled_dims(oled);

$fn = 96;
r = diameter / 2;

module rounded_square(size, radius) {
    offset(r = radius) square([size[0] - 2 * radius, size[1] - 2 * radius], center = true);
}

module base() {
    difference() {
        cylinder(h = height, r = r);
        translate([0, 0, floor_t]) cylinder(h = height, r = r - wall);
        // ON/OFF switch underneath, as on the original
        translate([0, -r / 2, -1]) linear_extrude(floor_t + 2) square(switch_slot, center = true);
        // power cable to the Pi's micro-USB
        translate([r - wall - 1, -12, floor_t + 3]) cube([wall + 2, 12, 7]);
    }
    // Pi Zero 2 W standoffs (58 x 23 mm hole pattern), M2.5
    for (x = [-29, 29], y = [-11.5, 11.5])
        translate([x + 8, y - 10, floor_t]) difference() {
            cylinder(h = 4, d = 5.5);
            cylinder(h = 5, d = 2.2);
        }
    // lid screw bosses
    for (i = [0 : screws - 1]) rotate(i * 360 / screws + 90)
        translate([r - wall - 4, 0, 0]) difference() {
            cylinder(h = height - lid_t, d = 8);
            translate([0, 0, floor_t]) cylinder(h = height, d = 2.6);
        }
}

module lid() {
    difference() {
        union() {
            cylinder(h = lid_t, r = r);
            translate([0, 0, -lip]) difference() {
                cylinder(h = lip, r = r - wall - clearance);
                translate([0, 0, -1]) cylinder(h = lip + 2, r = r - 2 * wall - clearance);
            }
        }
        // OLED window, above centre
        translate([0, 14 + O[4], -1]) linear_extrude(lid_t + 2)
            rounded_square([O[2], O[3]], 1);
        // buttons, AUCTION left and BUILD right
        for (x = [-24, 24]) translate([x, -22, -1]) cylinder(h = lid_t + 2, d = button_d);
        // the LED at the top
        translate([0, r - 14, -1]) cylinder(h = lid_t + 2, d = led_d);
        // sound holes above the buzzer
        for (a = [0 : 60 : 359]) translate([0, -40, -1]) rotate(a)
            translate([3.5, 0, 0]) cylinder(h = lid_t + 2, d = 2);
        translate([0, -40, -1]) cylinder(h = lid_t + 2, d = 2);
        // screw holes
        for (i = [0 : screws - 1]) rotate(i * 360 / screws + 90)
            translate([r - wall - 4, 0, -1]) cylinder(h = lid_t + 2, d = 3.3);
    }
    // OLED mounting posts under the lid (M2)
    for (dx = [-O[5] / 2, O[5] / 2], dy = [-O[6] / 2, O[6] / 2])
        translate([dx, 14 + dy, -4]) difference() {
            cylinder(h = 4, d = 4.5);
            translate([0, 0, -1]) cylinder(h = 4, d = 1.8);
        }
    // a ring around the LED to hold a diffuser
    translate([0, r - 14, -3]) difference() {
        cylinder(h = 3, d = led_d + 3);
        translate([0, 0, -1]) cylinder(h = 5, d = led_d);
    }
}

if (part == "base") base();
else if (part == "lid") translate([0, 0, lid_t]) rotate([180, 0, 0]) lid();
else {
    color("gainsboro") base();
    color("firebrick") translate([0, 0, height + 25]) lid();
}
