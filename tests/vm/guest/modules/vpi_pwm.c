// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for the Pi Zero 2 W's PWM block (pwm-bcm2835, as on every Pi 0-4) once the
 * pwm-2chan overlay is on: two channels on a device named as the Zero 2 W's,
 * /sys/devices/platform/soc/3f20c000.pwm, so /sys/class/pwm/pwmchip0/device leads
 * where it leads on that Pi (and where the service's ReadWritePaths= allows).
 *
 * The rules are the kernel's own: the PWM core refuses a period of 0 and a duty cycle
 * above the period (a fresh channel has period 0, and no .get_state reads one back, as
 * pwm-bcm2835 in 6.1 and 6.12; since 6.9 the core also takes a disabled state of period
 * 0, so on 6.12 a fresh channel's `enable 0` and `duty 0` pass), and this driver refuses what pwm-bcm2835 refuses (a period its
 * 32-bit counter cannot hold, or under 2 cycles of its 10 MHz clock). Every state it
 * accepts is recorded in /sys/kernel/debug/vpi-pwm/log, a line each:
 *
 *   t_ns channel period_ns duty_ns polarity(0 normal) enabled
 */
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pwm.h>
#include <linux/slab.h>
#include <linux/version.h>

#include "vpi_log.h"

#define PERIOD_MIN 2 /* cycles, as pwm-bcm2835 */

static ulong clock_hz = 10000000; /* what the Pi's device tree sets the PWM clock to */
module_param(clock_hz, ulong, 0444);

static struct vpi_log sent;
static struct dentry *dir;
static struct platform_device *soc, *pdev;
static struct pwm_chip *chip;

static int apply(struct pwm_chip *chip, struct pwm_device *pwm, const struct pwm_state *state)
{
	u64 max_period = DIV_ROUND_UP_ULL((u64)U32_MAX * NSEC_PER_SEC + NSEC_PER_SEC / 2,
					  clock_hz) - 1;
	char line[96];
	int n;

	if (state->period > max_period)
		return -EINVAL;
	if (DIV_ROUND_CLOSEST_ULL(state->period * clock_hz, NSEC_PER_SEC) < PERIOD_MIN)
		return -EINVAL;
	n = scnprintf(line, sizeof(line), "%llu %u %llu %llu %d %d\n", ktime_get_ns(),
		      pwm->hwpwm, state->period, state->duty_cycle, state->polarity,
		      state->enabled);
	vpi_log_add(&sent, line, n, NULL, 0);
	return 0;
}

static const struct pwm_ops ops = {
	.apply = apply,
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 7, 0)
	.owner = THIS_MODULE, /* since 6.7 pwmchip_add() sets the chip's owner itself */
#endif
};

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 9, 0)
/* Before 6.9 a chip is the driver's to allocate; since, the core's. */
static struct pwm_chip *pwmchip_alloc(struct device *parent, unsigned int npwm, size_t priv)
{
	struct pwm_chip *chip = kzalloc(sizeof(*chip), GFP_KERNEL);

	if (!chip)
		return ERR_PTR(-ENOMEM);
	chip->dev = parent;
	chip->npwm = npwm;
	return chip;
}

static void pwmchip_put(struct pwm_chip *chip)
{
	kfree(chip);
}
#endif

static int __init vpi_pwm_init(void)
{
	struct platform_device_info info = {
		.name = "3f20c000.pwm",
		.id = PLATFORM_DEVID_NONE,
	};
	int ret;

	vpi_log_init(&sent);
	soc = platform_device_register_simple("soc", PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(soc))
		return PTR_ERR(soc);
	info.parent = &soc->dev;
	pdev = platform_device_register_full(&info);
	if (IS_ERR(pdev)) {
		ret = PTR_ERR(pdev);
		goto fail_soc;
	}
	chip = pwmchip_alloc(&pdev->dev, 2, 0);
	if (IS_ERR(chip)) {
		ret = PTR_ERR(chip);
		goto fail_pdev;
	}
	chip->ops = &ops;
	ret = pwmchip_add(chip);
	if (ret)
		goto fail_chip;
	dir = debugfs_create_dir("vpi-pwm", NULL);
	debugfs_create_file("log", 0600, dir, &sent, &vpi_log_fops);
	debugfs_create_u64("dropped", 0400, dir, &sent.dropped);
	return 0;
fail_chip:
	pwmchip_put(chip);
fail_pdev:
	platform_device_unregister(pdev);
fail_soc:
	platform_device_unregister(soc);
	return ret;
}

static void __exit vpi_pwm_exit(void)
{
	debugfs_remove_recursive(dir);
	pwmchip_remove(chip);
	pwmchip_put(chip);
	platform_device_unregister(pdev);
	platform_device_unregister(soc);
	vpi_log_free(&sent);
}

module_init(vpi_pwm_init);
module_exit(vpi_pwm_exit);
MODULE_DESCRIPTION("virtual Pi: the PWM block's two channels, recorded (a test stand-in)");
MODULE_LICENSE("GPL");
