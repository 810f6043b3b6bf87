"""The simulator: the real firmware on gpiozero's MockFactory pins, with no hardware."""
