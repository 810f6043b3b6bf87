// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for the Pi's SPI0 (spi-bcm2835, dtparam=spi=on): bus 0 with spidev on CE0
 * and CE1, as /dev/spidev0.0 and /dev/spidev0.1. amd64 kernels have no SPI controller
 * to simulate one with (SPI_GPIO is off), so this registers its own.
 *
 * spidev refuses a bare "spidev" name; it is bound through one of the ids it lists
 * ("dh2228fv"), which is what a Pi's overlay does in effect.
 *
 * Every transfer is recorded in /sys/kernel/debug/vpi-spi-0/log with its time, its chip
 * select and the levels of gpiochip0's lines at that moment (an SPI display's D/C and
 * RST pins are plain GPIOs: the record says whether the bytes were commands or data):
 *
 *   struct { u64 t_ns; u64 lines (bit N: line N high); u32 speed_hz; u8 cs; u8 pad[3];
 *            u32 len; } then len bytes, little-endian.
 */
#include <linux/gpio/driver.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/spi/spi.h>
#include <linux/version.h>

#include "vpi_log.h"

static struct vpi_log sent;
static struct dentry *dir;
static struct platform_device *pdev;
static struct spi_controller *ctlr;

struct record {
	__le64 t_ns;
	__le64 lines;
	__le32 speed_hz;
	u8 cs;
	u8 pad[3];
	__le32 len;
} __packed;

/*
 * The levels of a chip's lines, bit N for line N (0 if it cannot say): read through the
 * chip's own callback, without gpiolib's locking, which a test stand-in can afford
 * (gpio-sim stays loaded while spidev is in use; a held gpio_device alone would not keep
 * its chip alive).
 */
static u64 chip_levels(struct gpio_chip *gc)
{
	unsigned long mask = ~0UL, bits = 0;

	if (!gc || !gc->get_multiple)
		return 0;
	if (gc->ngpio < BITS_PER_LONG)
		mask = (1UL << gc->ngpio) - 1;
	if (gc->get_multiple(gc, &mask, &bits))
		return 0;
	return bits;
}

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 7, 0)
static int is_header_chip(struct gpio_chip *gc, void *data)
{
	return gc->label && !strcmp(gc->label, "pinctrl-bcm2835");
}

static u64 line_levels(void)
{
	return chip_levels(gpiochip_find(NULL, is_header_chip));
}
#else
/* Since 6.7 a chip is found through its gpio_device (gpiochip_find is gone). */
static u64 line_levels(void)
{
	struct gpio_device *gdev = gpio_device_find_by_label("pinctrl-bcm2835");
	u64 levels;

	if (!gdev)
		return 0;
	levels = chip_levels(gpio_device_get_chip(gdev));
	gpio_device_put(gdev);
	return levels;
}
#endif

static int transfer_one(struct spi_controller *ctlr, struct spi_device *spi,
			struct spi_transfer *xfer)
{
	struct record head = {
		.t_ns = cpu_to_le64(ktime_get_ns()),
		.lines = cpu_to_le64(line_levels()),
		.speed_hz = cpu_to_le32(xfer->speed_hz),
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
		.cs = spi->chip_select,
#else
		.cs = spi_get_chipselect(spi, 0),
#endif
		.len = cpu_to_le32(xfer->len),
	};

	if (xfer->tx_buf)
		vpi_log_add(&sent, &head, sizeof(head), xfer->tx_buf, xfer->len);
	if (xfer->rx_buf)
		memset(xfer->rx_buf, 0, xfer->len);
	return 0; /* done at once: nothing to wait for */
}

static int __init vpi_spi_init(void)
{
	int ret, cs;

	vpi_log_init(&sent);
	pdev = platform_device_register_simple("3f204000.spi", PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	ctlr = spi_alloc_master(&pdev->dev, 0);
	if (!ctlr) {
		ret = -ENOMEM;
		goto fail_pdev;
	}
	ctlr->bus_num = 0;
	ctlr->num_chipselect = 2;
	ctlr->mode_bits = SPI_CPOL | SPI_CPHA | SPI_CS_HIGH | SPI_NO_CS;
	ctlr->bits_per_word_mask = SPI_BPW_MASK(8);
	ctlr->max_speed_hz = 125000000;
	ctlr->transfer_one = transfer_one;
	ret = spi_register_controller(ctlr);
	if (ret) {
		spi_controller_put(ctlr);
		goto fail_pdev;
	}
	for (cs = 0; cs < 2; cs++) {
		struct spi_board_info info = {
			.modalias = "dh2228fv", /* an id spidev binds to */
			.max_speed_hz = 125000000,
			.bus_num = 0,
			.chip_select = cs,
			.mode = SPI_MODE_0,
		};

		if (!spi_new_device(ctlr, &info)) {
			ret = -ENODEV;
			goto fail_ctlr;
		}
	}
	dir = debugfs_create_dir("vpi-spi-0", NULL);
	debugfs_create_file("log", 0600, dir, &sent, &vpi_log_fops);
	debugfs_create_u64("dropped", 0400, dir, &sent.dropped);
	return 0;
fail_ctlr:
	spi_unregister_controller(ctlr);
fail_pdev:
	platform_device_unregister(pdev);
	return ret;
}

static void __exit vpi_spi_exit(void)
{
	debugfs_remove_recursive(dir);
	spi_unregister_controller(ctlr);
	platform_device_unregister(pdev);
	vpi_log_free(&sent);
}

module_init(vpi_spi_init);
module_exit(vpi_spi_exit);
MODULE_DESCRIPTION("virtual Pi: SPI bus 0 with spidev on CE0/CE1, recorded (a test stand-in)");
MODULE_LICENSE("GPL");
