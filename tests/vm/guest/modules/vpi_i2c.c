// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for the Pi's I2C bus 1 (i2c-bcm2835 on GPIO2/3) with an OLED on it.
 *
 * Debian's i2c-stub speaks SMBus only, and luma sends each frame as plain I2C writes
 * (i2c_rdwr, up to 4 KiB) when it owns the bus. This adapter takes full I2C transfers:
 * only `addresses` answer (the display at 0x3C, or 0x3D when configured); any other is
 * refused with EREMOTEIO, as i2c-bcm2835 reports a NACK. Reads return zeros. Every write
 * is recorded with its time in /sys/kernel/debug/vpi-i2c-1/log:
 *
 *   struct { u64 t_ns (CLOCK_MONOTONIC); u16 addr; u16 flags; u32 len; } then len bytes,
 *   little-endian, one record per I2C message.
 */
#include <linux/i2c.h>
#include <linux/ktime.h>
#include <linux/module.h>

#include "vpi_log.h"

static ushort addresses[4] = { 0x3c };
static int n_addresses = 1;
module_param_array(addresses, ushort, &n_addresses, 0444);
MODULE_PARM_DESC(addresses, "the 7-bit addresses that answer");

static uint baudrate = 100000;
module_param(baudrate, uint, 0444);
MODULE_PARM_DESC(baudrate, "the bus speed config.txt asked for (recorded, not timed)");

static struct vpi_log sent;
static struct dentry *dir;

struct record {
	__le64 t_ns;
	__le16 addr;
	__le16 flags;
	__le32 len;
} __packed;

static bool answers(u16 addr)
{
	int i;

	for (i = 0; i < n_addresses; i++)
		if (addresses[i] == addr)
			return true;
	return false;
}

static int xfer(struct i2c_adapter *adap, struct i2c_msg *msgs, int num)
{
	int i;

	for (i = 0; i < num; i++) {
		struct i2c_msg *msg = &msgs[i];
		struct record head = {
			.t_ns = cpu_to_le64(ktime_get_ns()),
			.addr = cpu_to_le16(msg->addr),
			.flags = cpu_to_le16(msg->flags),
			.len = cpu_to_le32(msg->len),
		};

		if (!answers(msg->addr))
			return -EREMOTEIO;
		if (msg->flags & I2C_M_RD)
			memset(msg->buf, 0, msg->len);
		else
			vpi_log_add(&sent, &head, sizeof(head), msg->buf, msg->len);
	}
	return num;
}

static u32 functionality(struct i2c_adapter *adap)
{
	return I2C_FUNC_I2C | I2C_FUNC_SMBUS_EMUL;
}

static const struct i2c_algorithm algo = {
	.master_xfer = xfer,
	.functionality = functionality,
};

static struct i2c_adapter adapter = {
	.owner = THIS_MODULE,
	.algo = &algo,
	.nr = 1,
	.name = "vpi i2c-1: a stand-in for the Pi's bcm2835 I2C",
};

static int __init vpi_i2c_init(void)
{
	int ret;

	vpi_log_init(&sent);
	ret = i2c_add_numbered_adapter(&adapter);
	if (ret)
		return ret;
	dir = debugfs_create_dir("vpi-i2c-1", NULL);
	debugfs_create_file("log", 0600, dir, &sent, &vpi_log_fops);
	debugfs_create_u64("dropped", 0400, dir, &sent.dropped);
	return 0;
}

static void __exit vpi_i2c_exit(void)
{
	debugfs_remove_recursive(dir);
	i2c_del_adapter(&adapter);
	vpi_log_free(&sent);
}

module_init(vpi_i2c_init);
module_exit(vpi_i2c_exit);
MODULE_DESCRIPTION("virtual Pi: I2C bus 1 with a recording display (a test stand-in)");
MODULE_LICENSE("GPL");
