/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a stand-in device was sent, kept for the test to read: one growing buffer per
 * device, read whole from a debugfs file (writing anything to the file empties it and
 * sets its `dropped` count back to 0).
 * Capped so a runaway writer cannot eat the guest's memory: past the cap, records are
 * counted in `dropped` rather than kept.
 */
#ifndef VPI_LOG_H
#define VPI_LOG_H

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#define VPI_LOG_MAX (64u << 20)

struct vpi_log {
	struct mutex lock;
	char *buf;
	size_t len, cap;
	u64 dropped;
};

static inline void vpi_log_init(struct vpi_log *log)
{
	mutex_init(&log->lock);
	log->buf = NULL;
	log->len = log->cap = 0;
	log->dropped = 0;
}

/* Appends the parts as one record (all or nothing); the caller holds no lock. */
static inline void vpi_log_add(struct vpi_log *log, const void *head, size_t head_len,
			       const void *body, size_t body_len)
{
	size_t need = head_len + body_len;

	mutex_lock(&log->lock);
	if (log->len + need > log->cap) {
		size_t cap = max_t(size_t, log->cap * 2, 64u << 10);
		char *grown;

		while (cap < log->len + need)
			cap *= 2;
		if (cap > VPI_LOG_MAX) {
			log->dropped++;
			goto out;
		}
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
		grown = kvrealloc(log->buf, log->cap, cap, GFP_KERNEL);
#else
		grown = kvrealloc(log->buf, cap, GFP_KERNEL); /* 6.12 knows the old size */
#endif
		if (!grown) {
			log->dropped++;
			goto out;
		}
		log->buf = grown;
		log->cap = cap;
	}
	memcpy(log->buf + log->len, head, head_len);
	if (body_len)
		memcpy(log->buf + log->len + head_len, body, body_len);
	log->len += need;
out:
	mutex_unlock(&log->lock);
}

static inline ssize_t vpi_log_read(struct file *file, char __user *ubuf, size_t count,
				   loff_t *ppos)
{
	struct vpi_log *log = file->private_data;
	ssize_t ret;

	mutex_lock(&log->lock);
	ret = simple_read_from_buffer(ubuf, count, ppos, log->buf, log->len);
	mutex_unlock(&log->lock);
	return ret;
}

static inline ssize_t vpi_log_clear(struct file *file, const char __user *ubuf,
				    size_t count, loff_t *ppos)
{
	struct vpi_log *log = file->private_data;

	mutex_lock(&log->lock);
	log->len = 0;
	log->dropped = 0;
	mutex_unlock(&log->lock);
	return count;
}

static inline void vpi_log_free(struct vpi_log *log)
{
	kvfree(log->buf);
	log->buf = NULL;
}

static const struct file_operations vpi_log_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = vpi_log_read,
	.write = vpi_log_clear,
	.llseek = default_llseek,
};

#endif
