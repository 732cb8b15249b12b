/* fuse_ops.c - libfuse low-level operations over the fs layer.
 *
 * Every handler replies exactly once.  Errors are tfs_err codes until the
 * reply, where tfs_err_to_errno() picks the errno.  The tree is read-only:
 * every mutating operation answers EROFS.
 */
#define FUSE_USE_VERSION 312
#include "fuse/fuse_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/tfs_err.h"

/* ---- passthrough: the kernel reads a file wholly on SSD by itself ----
 *
 * The kernel ties a backing file to the inode, not to one open: while an
 * open of an inode reads through passthrough, every other open of it must
 * name the same backing file, and an inode with opens the daemon serves
 * (through the page cache) refuses a passthrough open; breaking either
 * rule fails the user's open() with EIO.  So each inode with open files
 * has an entry here: the backing id its passthrough opens share, with the
 * SSD tier's hold on that file (taken with the first, dropped after the
 * backing id is closed at the last release: the kernel reads the file
 * until then, and a hole punched under it would read as zeros), and the
 * count of the opens the daemon serves.  Entries live while either count
 * is not 0: at most one per open file.  The kernel drops an open's use of
 * the backing file before it sends RELEASE, so these counts are never
 * below the kernel's.  A passthrough open's handle has bit 0 set. */
#define PT_BUCKETS 1024

struct pt_inode {
	struct pt_inode *next;
	uint64_t ino;
	int backing_id;            /* > 0 while pt_opens > 0 */
	unsigned pt_opens, own_opens;
	struct fs_backing *hold;   /* while pt_opens > 0 */
};

struct pt_table {
	pthread_mutex_t lock;
	struct pt_inode *b[PT_BUCKETS];
};

struct fuse_ctx_data {
	struct tfs_fs *fs;
	double ttl_s;
	unsigned max_read;
	tierfs_ready_fn ready;
	void *ready_ctx;
	bool direct_io;
	const char *mountpoint;
	unsigned readahead_kb;     /* 0 = leave the kernel's default */
	atomic_bool readahead_set;
	bool pt_want;              /* asked for, and possible as far as known before INIT */
	atomic_bool pt_on;         /* decided at INIT; off again if the kernel refuses */
	struct pt_table pt;
};

static struct fuse_ctx_data *ctx_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct fs_file *file_of(const struct fuse_file_info *fi)
{
	return (struct fs_file *)(uintptr_t)(fi->fh & ~(uint64_t)1);
}

static bool passed_of(const struct fuse_file_info *fi)
{
	return fi->fh & 1;
}

static void reply_rc(fuse_req_t req, int rc)
{
	fuse_reply_err(req, tfs_err_to_errno(rc));
}

static void attr_to_stat(const struct fs_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->is_dir ? 2 : 1;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blksize = 1 << 20;
	st->st_blocks = (blkcnt_t)((a->size + 511) / 512);
	st->st_mtim.tv_sec = a->mtime;
	st->st_ctim.tv_sec = a->mtime;
	st->st_atim.tv_sec = a->mtime;
}

static void entry_from_attr(const struct fs_attr *a, double ttl, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = a->ino;
	e->generation = 1;
	e->attr_timeout = ttl;
	e->entry_timeout = ttl;
	attr_to_stat(a, &e->attr);
}

/* Is the kernel's passthrough available to this mount?  Decided once, at
 * INIT; the reason it is not goes to the log and `tierfs stats` shows
 * passthrough.on = false. */
static void pt_init(struct fuse_ctx_data *c, struct fuse_conn_info *conn)
{
#ifdef TIERFS_FUSE_PASSTHROUGH
	if (!c->pt_want)
		goto off;
	if (!(conn->capable & FUSE_CAP_PASSTHROUGH)) {
		log_warn("passthrough: the kernel does not offer FUSE passthrough (Linux 6.9 or "
			 "later built with CONFIG_FUSE_PASSTHROUGH); cached files are read through "
			 "the daemon");
		goto off;
	}
	conn->want |= FUSE_CAP_PASSTHROUGH;
	/* the cache directory may be on a stacked filesystem (overlayfs in a
	 * container): then nothing may stack over this mount instead */
	conn->max_backing_stack_depth = FUSE_BACKING_STACKED_OVER;
	atomic_store(&c->pt_on, true);
	fs_passthrough_set(c->fs, true);
	log_info("passthrough: on: the kernel reads files wholly on SSD by itself");
	return;
off:
#endif
	(void)conn;
	atomic_store(&c->pt_on, false);
	fs_passthrough_set(c->fs, false);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fuse_ctx_data *c = userdata;

	/* reads come from a remote store: let the kernel send them in
	 * parallel and in large pieces */
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* always readdirplus: with "auto" the kernel sends plain READDIR for
	 * every batch after the first, without inode numbers */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* libfuse insists that init() agrees with the max_read mount option */
	conn->max_read = c->max_read;
	pt_init(c, conn);
	if (c->ready)
		c->ready(c->ready_ctx);
}

static void set_kernel_readahead(const char *mountpoint, unsigned kb);

/* The kernel's readahead window of this mount, set once, on the first
 * request after INIT: the INIT reply caps the window at its max_readahead
 * (128 KiB here), so a value written before INIT is silently lowered, and
 * reads then reach us as 128 KiB requests.  A file's readahead state is
 * initialised after its OPEN, so any request before the first open is in
 * time; lookup, getattr and open each make sure. */
static void ensure_readahead(struct fuse_ctx_data *c)
{
	if (c->readahead_kb && !atomic_load_explicit(&c->readahead_set, memory_order_relaxed) &&
	    !atomic_exchange(&c->readahead_set, true))
		set_kernel_readahead(c->mountpoint, c->readahead_kb);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_ctx_data *c = ctx_of(req);
	struct fs_attr a;
	struct fuse_entry_param e;
	int rc;

	ensure_readahead(c);
	rc = fs_lookup(c->fs, parent, name, &a);

	if (rc == TFS_E_NOENT) {
		/* negative entry, cached like a positive one */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = c->ttl_s;
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc != TFS_OK) {
		reply_rc(req, rc);
		return;
	}
	entry_from_attr(&a, c->ttl_s, &e);
	/* an interrupted request never reaches the kernel, which will then
	 * never forget the lookup we took for it */
	if (fuse_reply_entry(req, &e) == -ENOENT)
		fs_forget(c->fs, a.ino, 1);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_forget(ctx_of(req)->fs, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		fs_forget(ctx_of(req)->fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse_ctx_data *c = ctx_of(req);
	struct fs_attr a;
	struct stat st;
	int rc;

	ensure_readahead(c);
	rc = fs_getattr(c->fs, ino, &a);

	if (rc != TFS_OK) {
		reply_rc(req, rc);
		return;
	}
	attr_to_stat(&a, &st);
	fuse_reply_attr(req, &st, c->ttl_s);
}

/* libfuse's passthrough calls, where it has them (3.16+); without them
 * pt_possible() keeps passthrough off and these are never reached. */
#ifdef TIERFS_FUSE_PASSTHROUGH
static int backing_open(fuse_req_t req, int fd, struct fuse_file_info *fi)
{
	int id = fuse_passthrough_open(req, fd);

	if (id > 0)
		fi->backing_id = id;
	return id;
}

static void backing_share(struct fuse_file_info *fi, int id)
{
	fi->backing_id = id;
}

static void backing_close(fuse_req_t req, int id)
{
	(void)fuse_passthrough_close(req, id);
}
#else
static int backing_open(fuse_req_t req, int fd, struct fuse_file_info *fi)
{
	errno = ENOSYS;
	return 0;
}

static void backing_share(struct fuse_file_info *fi, int id)
{
}

static void backing_close(fuse_req_t req, int id)
{
}
#endif

static struct pt_inode **pt_slot(struct pt_table *t, uint64_t ino)
{
	struct pt_inode **pp = &t->b[ino % PT_BUCKETS];

	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->next;
	return pp;
}

/* Unlink and free e when no open uses it (t->lock held). */
static void pt_maybe_free(struct pt_table *t, struct pt_inode *e)
{
	struct pt_inode **pp;

	if (e->pt_opens || e->own_opens)
		return;
	pp = pt_slot(t, e->ino);
	*pp = e->next;
	free(e);
}

/* Count the open of f (inode ino) as passthrough or served here, and
 * choose: passthrough when the inode's other opens are passthrough at the
 * same version, or when it has no other open and f's version is wholly
 * on SSD.  0 (fi->backing_id set for a passthrough open, *passed), or
 * -EBUSY: the inode is open through passthrough at another version (the
 * object changed), which the kernel cannot mix with this one. */
static int pt_open(struct fuse_ctx_data *c, fuse_req_t req, uint64_t ino, struct fs_file *f,
		   struct fuse_file_info *fi, bool *passed)
{
	struct pt_inode **pp, *e;
	struct fs_backing *hold = NULL;
	int rc = 0, fd;

	*passed = false;
	pthread_mutex_lock(&c->pt.lock);
	pp = pt_slot(&c->pt, ino);
	e = *pp;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			rc = -ENOMEM;
			goto out;
		}
		e->ino = ino;
		*pp = e;
	}
	if (e->pt_opens > 0) {
		if (!fs_backing_same(e->hold, f)) {
			rc = -EBUSY;
			goto out;
		}
		e->pt_opens++;
		backing_share(fi, e->backing_id);
		fs_backing_reopened(c->fs, e->hold);
		*passed = true;
	} else if (e->own_opens == 0 && atomic_load(&c->pt_on) &&
		   fs_backing_get(c->fs, f, &fd, &hold) == TFS_OK) {
		int id;

		errno = 0;
		id = backing_open(req, fd, fi);
		close(fd);
		if (id > 0) {
			e->backing_id = id;
			e->hold = hold;
			e->pt_opens = 1;
			*passed = true;
		} else {
			/* the kernel said no (privileges: CAP_SYS_ADMIN; a backing
			 * filesystem it cannot stack on): no use asking again */
			fs_backing_put(c->fs, hold);
			if (atomic_exchange(&c->pt_on, false)) {
				fs_passthrough_set(c->fs, false);
				log_warn("passthrough: the kernel refused a backing file (%s); off for "
					 "this mount, cached files are read through the daemon",
					 errno ? strerror(errno) : "no reason given");
			}
			e->own_opens++;
		}
	} else {
		e->own_opens++;
	}
out:
	if (e && rc != 0)
		pt_maybe_free(&c->pt, e);
	pthread_mutex_unlock(&c->pt.lock);
	if (rc == 0 && (*passed || atomic_load(&c->pt_on)))
		fs_passthrough_count(c->fs, *passed);
	return rc;
}

/* An open counted by pt_open() is over: at the inode's last passthrough
 * release, its backing id is closed, then the hold dropped. */
static void pt_release(struct fuse_ctx_data *c, fuse_req_t req, uint64_t ino, bool passed)
{
	struct fs_backing *hold = NULL;
	struct pt_inode *e;

	pthread_mutex_lock(&c->pt.lock);
	e = *pt_slot(&c->pt, ino);
	if (e && passed && e->pt_opens > 0) {
		if (--e->pt_opens == 0) {
			backing_close(req, e->backing_id);
			hold = e->hold;
			e->hold = NULL;
			e->backing_id = 0;
		}
	} else if (e && !passed && e->own_opens > 0) {
		e->own_opens--;
	}
	if (e)
		pt_maybe_free(&c->pt, e);
	pthread_mutex_unlock(&c->pt.lock);
	fs_backing_put(c->fs, hold);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse_ctx_data *c = ctx_of(req);
	struct fs_file *f;
	bool keep = false, passed = false;
	int rc;

	ensure_readahead(c);
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & (O_TRUNC | O_CREAT))) {
		fuse_reply_err(req, EROFS);
		return;
	}
	rc = fs_open(c->fs, ino, &f, &keep);
	if (rc != TFS_OK) {
		reply_rc(req, rc);
		return;
	}
	fi->keep_cache = keep;
	/* --direct-io: no kernel page cache for file data (reads are served
	 * from the tiers every time, with one copy instead of two, and no
	 * second copy of cached bytes in RAM) */
	fi->direct_io = ctx_of(req)->direct_io;
	fi->noflush = 1;
	if (c->pt_want) {
		int err = pt_open(c, req, ino, f, fi, &passed);

		if (err) {
			if (err == -EBUSY)
				log_info("passthrough: inode %llu is open at an older version; a "
					 "newer one can be opened once those close",
					 (unsigned long long)ino);
			fs_release(c->fs, f);
			fuse_reply_err(req, -err);
			return;
		}
		if (passed) {
			/* the backing file's page cache serves it; the kernel
			 * refuses (EIO) a passthrough open with any flag but
			 * direct_io, noflush and parallel direct writes */
			fi->direct_io = 0;
			fi->keep_cache = 0;
		}
	}
	fi->fh = (uint64_t)(uintptr_t)f | (passed ? 1 : 0);
	if (fuse_reply_open(req, fi) != 0) {
		/* the open was interrupted */
		if (c->pt_want)
			pt_release(c, req, ino, passed);
		fs_release(c->fs, f);
	}
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fuse_ctx_data *c = ctx_of(req);
	struct fs_file *f = file_of(fi);
	struct fs_read r;
	int rc;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = fs_read(c->fs, f, (uint64_t)off, size, &r);
	if (rc != TFS_OK) {
		reply_rc(req, rc);
		return;
	}
	/* zero-copy: the reply is written from the chunk buffers we hold */
	fuse_reply_iov(req, r.iov, (int)r.n);
	fs_read_done(c->fs, &r);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse_ctx_data *c = ctx_of(req);

	if (c->pt_want)
		pt_release(c, req, ino, passed_of(fi));
	fs_release(c->fs, file_of(fi));
	fuse_reply_err(req, 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse_ctx_data *c = ctx_of(req);
	struct fs_dir *d;
	int rc = fs_opendir(c->fs, ino, &d);

	if (rc != TFS_OK) {
		reply_rc(req, rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fi->cache_readdir = 0;
	if (fuse_reply_open(req, fi) != 0)
		fs_releasedir(c->fs, d);
}

/* Offsets: 0 = ".", 1 = "..", 2 + i = entry i.  The next offset of an
 * entry is its own offset + 1. */
static void readdir_common(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
			   bool plus)
{
	struct fuse_ctx_data *c = ctx_of(req);
	struct fs_dir *d = (struct fs_dir *)(uintptr_t)fi->fh;
	char *buf;
	size_t used = 0, n_looked = 0;
	uint64_t looked[512];       /* inos given a lookup in this reply */
	int rc = TFS_OK;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (uint64_t pos = (uint64_t)off;; pos++) {
		const char *name;
		bool is_dir;
		struct fs_attr a;
		struct fuse_entry_param e;
		size_t need;

		if (pos < 2) {
			name = pos == 0 ? "." : "..";
			memset(&a, 0, sizeof(a));
			a.ino = pos == 0 ? fs_dir_ino(d) : fs_dir_parent_ino(d);
			a.is_dir = true;
			a.mode = S_IFDIR;
		} else if (!fs_dir_entry(d, pos - 2, &name, &is_dir)) {
			break;
		}
		if (!plus) {
			struct stat st;
			memset(&st, 0, sizeof(st));
			/* entries' inodes are assigned at lookup; a placeholder,
			 * since d_ino 0 means "deleted" to readdir() */
			st.st_ino = pos < 2 ? a.ino : 0xffffffffu;
			st.st_mode = (pos < 2 || is_dir) ? S_IFDIR : S_IFREG;
			need = fuse_add_direntry(req, buf + used, size - used, name, &st,
						 (off_t)pos + 1);
			if (need > size - used)
				break;
			used += need;
			continue;
		}
		/* readdirplus adds a lookup for every entry it returns, so
		 * measure first and take the lookup only if the entry fits */
		need = fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0);
		if (need > size - used || n_looked == sizeof(looked) / sizeof(looked[0]))
			break;
		if (pos < 2) {
			/* "." and ".." are not looked up: ino 0 keeps the kernel
			 * from caching them as entries */
			memset(&e, 0, sizeof(e));
			e.attr.st_mode = S_IFDIR;
			e.attr.st_ino = a.ino;
		} else {
			rc = fs_dir_entry_attr(c->fs, d, pos - 2, &a);
			if (rc != TFS_OK)
				break;
			looked[n_looked++] = a.ino;
			entry_from_attr(&a, c->ttl_s, &e);
		}
		used += fuse_add_direntry_plus(req, buf + used, size - used, name, &e, (off_t)pos + 1);
	}
	if (rc != TFS_OK && used == 0) {
		reply_rc(req, rc);
	} else if (fuse_reply_buf(req, buf, used) == -ENOENT) {
		for (size_t i = 0; i < n_looked; i++)   /* interrupted: undo */
			fs_forget(c->fs, looked[i], 1);
	}
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	readdir_common(req, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	readdir_common(req, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fs_releasedir(ctx_of(req)->fs, (struct fs_dir *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_blocks = (fsblkcnt_t)1 << 40;   /* object stores have no fixed size */
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

/* ---- the read-only refusals ---- */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	fuse_reply_err(req, EROFS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fuse_reply_err(req, EROFS);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	fuse_reply_err(req, EROFS);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	fuse_reply_err(req, EROFS);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	fuse_reply_err(req, EROFS);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static const struct fuse_lowlevel_ops tierfs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.removexattr = op_removexattr,
	.create = op_create,
	.fallocate = op_fallocate,
};

static bool mountinfo_find(const char *path, char *devno, size_t cap);

/* Set the kernel's readahead window of our mount (its bdi).  The FUSE
 * default is 128 KiB: the kernel then asks for one 128 KiB piece at a
 * time, and the next chunk's GET starts only when its first byte is
 * read.  A window of two chunks lets the kernel ask for chunk N+1 while
 * chunk N is read (measured: scripts/bench/read_cold.sh).  Needs root;
 * failure only costs speed. */
static void set_kernel_readahead(const char *mountpoint, unsigned kb)
{
	char dev[64], path[128], val[32];
	FILE *f;

	/* the device from mountinfo, not stat(): our own mount cannot
	 * answer before INIT */
	if (!mountinfo_find(mountpoint, dev, sizeof(dev))) {
		log_info("readahead: %s not found in mountinfo", mountpoint);
		return;
	}
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	snprintf(val, sizeof(val), "%u\n", kb);
	f = fopen(path, "we");
	if (!f || fputs(val, f) < 0 || fclose(f) != 0) {
		if (f)
			fclose(f);
		log_info("readahead: cannot set %s: %s", path, strerror(errno));
		return;
	}
	log_info("kernel readahead of %s set to %u KiB", mountpoint, kb);
}

/* Does this process have CAP_SYS_ADMIN, which the kernel asks of a
 * daemon that hands it backing files? */
static bool has_sys_admin(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) != 0)
		return false;
	return d[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32));
}

/* Passthrough as far as can be known before the kernel's INIT: asked
 * for, an SSD tier to read from, a libfuse with the API, the privilege.
 * Why not goes to the log (the kernel's part is decided at INIT). */
static bool pt_possible(struct tfs_fs *fs, const struct tierfs_mount_opts *o)
{
	if (!o->passthrough)
		return false;
	if (!fs_has_ssd(fs)) {
		log_info("passthrough: off: no --cache-dir, nothing on SSD for the kernel to read");
		return false;
	}
#ifndef TIERFS_FUSE_PASSTHROUGH
	log_warn("passthrough: this tierfs was built with libfuse %d.%d, which has no "
		 "passthrough API (3.16 or later: scripts/build-libfuse.sh); cached files are "
		 "read through the daemon", FUSE_MAJOR_VERSION, FUSE_MINOR_VERSION);
	return false;
#else
	if (!has_sys_admin()) {
		log_warn("passthrough: the kernel lets only a daemon with CAP_SYS_ADMIN hand it "
			 "backing files; cached files are read through the daemon");
		return false;
	}
	return true;
#endif
}

int tierfs_fuse_serve(struct tfs_fs *fs, const struct tierfs_mount_opts *o,
		      tierfs_ready_fn ready, void *ready_ctx, char *err, size_t errlen)
{
	struct fuse_ctx_data c = { fs, o->ttl_s, (unsigned)o->max_read, ready, ready_ctx,
				   o->direct_io, o->mountpoint, o->kernel_readahead_kb, false,
				   pt_possible(fs, o), false, { PTHREAD_MUTEX_INITIALIZER, { 0 } } };
	struct fuse_session *se = NULL;
	struct fuse_loop_config *loop = NULL;
	char opts[2048];
	char *argv[] = { "tierfs", "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	int rc = -1, n;

	/* max_read: one read may span at most FS_READ_MAX_IOV - 1 chunks (on
	 * 64 KiB-page machines the kernel would otherwise send 16 MiB) */
	n = snprintf(opts, sizeof(opts),
		     "ro,default_permissions,fsname=%s,subtype=tierfs,max_read=%llu%s%s",
		     o->fsname, (unsigned long long)o->max_read,
		     o->extra_options && *o->extra_options ? "," : "",
		     o->extra_options ? o->extra_options : "");
	if (n < 0 || (size_t)n >= sizeof(opts)) {
		snprintf(err, errlen, "mount options too long");
		return -1;
	}
	se = fuse_session_new(&args, &tierfs_ops, sizeof(tierfs_ops), &c);
	if (!se) {
		snprintf(err, errlen, "invalid FUSE options '%s'", o->extra_options ? o->extra_options : "");
		goto out;
	}
	if (fuse_set_signal_handlers(se) != 0) {
		snprintf(err, errlen, "cannot install signal handlers");
		goto destroy;
	}
	if (fuse_session_mount(se, o->mountpoint) != 0) {
		snprintf(err, errlen, "cannot mount on mountpoint %s (is /dev/fuse available?)",
			 o->mountpoint);
		goto signals;
	}
	loop = fuse_loop_cfg_create();
	if (!loop) {
		snprintf(err, errlen, "out of memory");
		goto unmount;
	}
	/* a worker once started stays: with libfuse keeping 4 idle, a loader's
	 * bursts of opens started and ended some 450 threads an epoch, each
	 * start a stack mapped and each end a TLB shootdown on every core,
	 * and its epochs served from SSD took 3 s instead of 1.1 */
	fuse_loop_cfg_set_max_threads(loop, o->max_threads ? o->max_threads : 16);
	fuse_loop_cfg_set_idle_threads(loop, o->max_threads ? o->max_threads : 16);
	fuse_loop_cfg_set_clone_fd(loop, 0);
	/* ready() is called from op_init, once the kernel has connected */
	n = fuse_session_loop_mt(se, loop);
	if (n < 0) {
		/* 0 after an unmount, the (positive) signal number after a
		 * signal, -errno when the session itself failed */
		snprintf(err, errlen, "FUSE session failed: %s", strerror(-n));
	} else {
		rc = 0;
	}
	fuse_loop_cfg_destroy(loop);
unmount:
	fuse_session_unmount(se);
signals:
	fuse_remove_signal_handlers(se);
destroy:
	fuse_session_destroy(se);
out:
	fuse_opt_free_args(&args);
	return rc;
}

/* Undo /proc/self/mountinfo's octal escapes (\040 for space ...) in place. */
static void unescape_mountinfo(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Look path up in /proc/self/mountinfo; on a match copy its major:minor
 * into devno (if not NULL).  The last match wins (stacked mounts). */
static bool mountinfo_find(const char *path, char *devno, size_t cap)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t lcap = 0;
	bool found = false;

	if (!f)
		return false;
	while (getline(&line, &lcap, f) > 0) {
		/* id parent major:minor root mountpoint ... */
		char *save = NULL, *tok = strtok_r(line, " ", &save), *dev = NULL;
		for (int i = 0; tok && i < 4; i++) {
			tok = strtok_r(NULL, " ", &save);
			if (i == 1)    /* the third field */
				dev = tok;
		}
		if (tok && dev) {
			unescape_mountinfo(tok);
			if (strcmp(tok, path) == 0) {
				found = true;
				if (devno)
					snprintf(devno, cap, "%s", dev);
			}
		}
	}
	free(line);
	fclose(f);
	return found;
}

bool tierfs_is_mountpoint(const char *path)
{
	return mountinfo_find(path, NULL, 0);
}

int tierfs_unmount(const char *path, char *err, size_t errlen)
{
	pid_t pid;
	int status;

	if (geteuid() == 0) {
		if (umount2(path, 0) == 0)
			return 0;
		snprintf(err, errlen, "cannot unmount %s: %s", path, strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "--", path, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "fusermount3 -u %s failed", path);
		return -1;
	}
	return 0;
}
