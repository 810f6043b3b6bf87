// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for the Pi's device tree, as /proc shows it: what gpiozero and cityunit read
 * of it on a Raspberry Pi, on a machine that has no device tree at all.
 *
 *   /proc/device-tree/model                                  "Raspberry Pi Zero 2 W Rev 1.0"
 *   /proc/device-tree/system/linux,revision                  the board's revision code
 *   /proc/device-tree/soc/gpio@7e200000/pwm_pins/brcm,pins    the pins a PWM overlay takes
 *
 * Entries made under /proc by a module appear in every procfs instance, so a service
 * with ProtectProc= (a procfs of its own) sees them too; a bind mount would not reach it.
 * The last one exists only when the firmware stand-in found a PWM overlay in config.txt.
 */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

static uint revision = 0x902120; /* Pi Zero 2 W rev 1.0 */
module_param(revision, uint, 0444);
MODULE_PARM_DESC(revision, "board revision code, as /proc/device-tree/system/linux,revision");

static char *model = "Raspberry Pi Zero 2 W Rev 1.0";
module_param(model, charp, 0444);

static int pwm_pins[4];
static int n_pwm_pins;
module_param_array(pwm_pins, int, &n_pwm_pins, 0444);
MODULE_PARM_DESC(pwm_pins, "GPIOs given to the PWM block by an overlay (none: no overlay)");

struct blob {
	size_t len;
	u8 data[];
};

static ssize_t blob_read(struct file *file, char __user *ubuf, size_t count, loff_t *ppos)
{
	struct blob *blob = pde_data(file_inode(file));

	return simple_read_from_buffer(ubuf, count, ppos, blob->data, blob->len);
}

static const struct proc_ops blob_ops = {
	.proc_read = blob_read,
	.proc_lseek = default_llseek,
};

static struct proc_dir_entry *root;
static struct blob *blobs[3];

static struct blob *blob_new(const void *data, size_t len)
{
	struct blob *blob = kmalloc(sizeof(*blob) + len, GFP_KERNEL);

	if (blob) {
		blob->len = len;
		memcpy(blob->data, data, len);
	}
	return blob;
}

/* Device tree cells are big-endian 32-bit words. */
static struct blob *cells(const int *values, int n)
{
	__be32 be[4];
	int i;

	for (i = 0; i < n; i++)
		be[i] = cpu_to_be32(values[i]);
	return blob_new(be, n * sizeof(be[0]));
}

static int __init vpi_board_init(void)
{
	struct proc_dir_entry *system, *pins;
	int rev = revision;

	root = proc_mkdir("device-tree", NULL);
	if (!root)
		return -EEXIST; /* a real device tree is there: leave it */
	blobs[0] = blob_new(model, strlen(model) + 1);
	blobs[1] = cells(&rev, 1);
	if (!blobs[0] || !blobs[1])
		goto fail;
	system = proc_mkdir("system", root);
	if (!system || !proc_create_data("model", 0444, root, &blob_ops, blobs[0]) ||
	    !proc_create_data("linux,revision", 0444, system, &blob_ops, blobs[1]))
		goto fail;
	if (n_pwm_pins) {
		blobs[2] = cells(pwm_pins, n_pwm_pins);
		pins = proc_mkdir("soc", root);
		pins = pins ? proc_mkdir("gpio@7e200000", pins) : NULL;
		pins = pins ? proc_mkdir("pwm_pins", pins) : NULL;
		if (!blobs[2] || !pins ||
		    !proc_create_data("brcm,pins", 0444, pins, &blob_ops, blobs[2]))
			goto fail;
	}
	return 0;
fail:
	proc_remove(root);
	kfree(blobs[0]);
	kfree(blobs[1]);
	kfree(blobs[2]);
	return -ENOMEM;
}

static void __exit vpi_board_exit(void)
{
	proc_remove(root);
	kfree(blobs[0]);
	kfree(blobs[1]);
	kfree(blobs[2]);
}

module_init(vpi_board_init);
module_exit(vpi_board_exit);
MODULE_DESCRIPTION("virtual Pi: the board's device tree entries in /proc (a test stand-in)");
MODULE_LICENSE("GPL");
