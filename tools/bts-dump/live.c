// SPDX-License-Identifier: GPL-2.0
/*
 * Live tracing: reading the traced threads' /dev/bts files until each is
 * at its end, and sending each process's mappings (its /proc/PID/maps,
 * its vDSO) and the formats of the events its markers name ahead of the
 * records that need them.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "live.h"

/* The most of a maps file kept: what a raw file chunk can hold. */
#define MAX_MAPS	(60U << 20)
/* The most of a vDSO kept. */
#define MAX_VDSO	(1024U * 1024)
/* The largest mapped file a trace carries a copy of: a raw chunk's. */
#define MAX_FILE_COPY	((64U << 20) - 32)
/* What one chunk of a JIT map may hold: a raw chunk's payload is 64 MB. */
#define MAX_JIT		(60U << 20)

struct lproc *lproc_find(struct live *lv, u32 pid)
{
	struct lproc *lp;

	hash_for_each_possible(lv->procs, lp, node, pid)
		if (lp->pid == pid)
			return lp;
	return NULL;
}

struct lproc *lproc_get(struct live *lv, u32 pid, bool *created)
{
	struct lproc *lp = lproc_find(lv, pid);

	*created = false;
	if (lp)
		return lp;
	lp = xcalloc(1, sizeof(*lp));
	lp->pid = pid;
	hash_add(lv->procs, &lp->node, pid);
	*created = true;
	return lp;
}

/* A /proc file, whole up to @max bytes (cut after its last full line). */
static char *read_proc(const char *path, size_t *len, size_t max)
{
	size_t cap = 65536, n = 0;
	char *buf;
	ssize_t r;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = xmalloc(cap);
	for (;;) {
		if (n == cap) {
			if (cap >= max)
				break;
			cap = cap * 2 < max ? cap * 2 : max;
			buf = xrealloc(buf, cap);
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			close(fd);
			return NULL;
		}
		if (r == 0)
			break;
		n += r;
	}
	close(fd);
	if (n == max)
		while (n && buf[n - 1] != '\n')
			n--;
	*len = n;
	return buf;
}

/*
 * The numbers of the line @name (with its colon) of /proc/PID/status, in
 * @v, at most @max of them.  Return: how many.
 */
static size_t read_status(u32 pid, const char *name, unsigned long *v,
			  size_t max)
{
	size_t len, n = 0, skip = strlen(name);
	char path[64], *text, *p, *eol, *end;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	text = read_proc(path, &len, 65536);
	if (!text)
		return 0;
	p = memmem(text, len, name, skip);
	eol = p ? memchr(p + skip, '\n', text + len - p - skip) : NULL;
	if (eol) {
		*eol = 0;
		for (p += skip; n < max; p = end) {
			v[n] = strtoul(p, &end, 10);
			if (end == p)
				break;
			n++;
		}
	}
	free(text);
	return n;
}

static u32 read_tgid(u32 tid)
{
	unsigned long tgid;

	return read_status(tid, "\nTgid:", &tgid, 1) && tgid <= UINT32_MAX ?
	       tgid : 0;
}

static u32 read_ppid(u32 pid)
{
	unsigned long ppid;

	return read_status(pid, "\nPPid:", &ppid, 1) && ppid <= UINT32_MAX ?
	       ppid : 0;
}

/* Send the vDSO's image once per address it is mapped at. */
static int send_vdso(struct live *lv, struct lproc *lp,
		     const struct mapset *snap)
{
	const struct mapping *m = NULL;
	char path[64];
	size_t i, len;
	ssize_t n;
	void *data;
	int fd;

	for (i = 0; i < snap->n; i++)
		if (!strcmp(snap->v[i].path, "[vdso]"))
			m = &snap->v[i];
	if (!m || m->start == lp->vdso)
		return 0;
	lp->vdso = m->start;
	len = m->end - m->start < MAX_VDSO ? m->end - m->start : MAX_VDSO;
	snprintf(path, sizeof(path), "/proc/%u/mem", lp->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	data = xmalloc(len);
	n = pread(fd, data, len, m->start);
	close(fd);
	if (n > 0 && lv->out->memory(lv->out, lp->pid, m->start, data, n)) {
		free(data);
		return -1;
	}
	free(data);
	return 0;
}

/*
 * Whether the file @m maps is gone from its path: deleted (the kernel
 * says so), or another file there now.  The path is the process's, in
 * its own mount namespace.
 */
static bool file_moved(const struct lproc *lp, const struct mapping *m)
{
	static const char deleted[] = " (deleted)";
	size_t n = strlen(m->path), k = sizeof(deleted) - 1;
	char path[PATH_MAX + 32];
	struct stat st;

	if (n > k && !strcmp(m->path + n - k, deleted))
		return true;
	snprintf(path, sizeof(path), "/proc/%u/root%s", lp->pid, m->path);
	if (stat(path, &st))
		return errno == ENOENT;
	return st.st_ino != m->inode || major(st.st_dev) != m->dev_major ||
	       minor(st.st_dev) != m->dev_minor;
}

/* The whole of @fd, up to @max bytes; NULL if it is longer or unreadable. */
static void *read_whole(int fd, size_t max, size_t *len)
{
	struct stat st;
	size_t n = 0;
	ssize_t r;
	void *data;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (u64)st.st_size > max)
		return NULL;
	data = xmalloc(st.st_size ? st.st_size : 1);
	while (n < (size_t)st.st_size) {
		r = pread(fd, (char *)data + n, st.st_size - n, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(data);
			return NULL;
		}
		n += r;
	}
	*len = n;
	return data;
}

/*
 * Send a copy of each code file of the snapshot that its path no longer
 * names (a library deleted by an upgrade, a program rebuilt), read
 * through /proc/PID/map_files, which has the file as it was mapped: the
 * printer names the mapping's code from it.  Opening those needs
 * CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE).  Once per mapping.
 */
static int send_moved_files(struct live *lv, struct lproc *lp,
			    const struct mapset *snap)
{
	char path[96];
	size_t i, k, len;
	void *data;
	int fd, ret;

	for (i = 0; i < snap->n; i++) {
		const struct mapping *m = &snap->v[i];
		struct file_id id = {
			.start = m->start, .inode = m->inode,
			.dev_major = m->dev_major, .dev_minor = m->dev_minor,
		};

		if (!strchr(m->perms, 'x') || m->path[0] != '/' || !m->inode)
			continue;
		for (k = 0; k < lp->nfiles; k++)
			if (!memcmp(&lp->files[k], &id, sizeof(id)))
				break;
		if (k < lp->nfiles || !file_moved(lp, m))
			continue;
		lp->files = xrealloc(lp->files,
				     (lp->nfiles + 1) * sizeof(*lp->files));
		lp->files[lp->nfiles++] = id;
		snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx",
			 lp->pid, (unsigned long long)m->start,
			 (unsigned long long)m->end);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			if ((errno == EPERM || errno == EACCES) &&
			    !lv->said_map_files && !lv->o->quiet) {
				warnx("%s: deleted or replaced since process %u mapped it, and only root can read it from %s: its addresses will not be symbolized",
				      m->path, lp->pid, path);
				lv->said_map_files = true;
			}
			continue;
		}
		data = read_whole(fd, MAX_FILE_COPY, &len);
		close(fd);
		if (!data) {
			if (!lv->o->quiet)
				warnx("%s: no copy of it in the trace (unreadable, or over %u MB): its addresses will not be symbolized",
				      m->path, MAX_FILE_COPY >> 20);
			continue;
		}
		ret = lv->out->file(lv->out, lp->pid, &id, data, len);
		free(data);
		if (ret)
			return -1;
	}
	return 0;
}

/* The name in the comm file at @path, without its newline; "" if none. */
static void read_comm(const char *path, char name[COMM_MAX])
{
	size_t len;
	char *text = read_proc(path, &len, COMM_MAX);

	name[0] = 0;
	if (!text)
		return;
	if (len && text[len - 1] == '\n')
		len--;
	set_comm(name, text, len);
	free(text);
}

/* Send the process's name (/proc/PID/comm) if it changed since last time. */
static int send_comm(struct live *lv, struct lproc *lp)
{
	char path[64], name[COMM_MAX];

	if (lv->kernel_names)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/comm", lp->pid);
	read_comm(path, name);
	if (!name[0] || !strcmp(name, lp->comm))
		return 0;
	memcpy(lp->comm, name, sizeof(lp->comm));
	return lv->out->comm(lv->out, lp->pid, 0, name, strlen(name));
}

/*
 * Send a thread's name (/proc/PID/task/TID/comm) if it is not the one the
 * thread goes by in the trace: the name last sent as its own, or else its
 * process's.
 */
static int send_thread_comm(struct live *lv, struct lthread *lt)
{
	struct lproc *lp = lt->lp;
	char path[64], name[COMM_MAX];

	if (lv->kernel_names)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", lp->pid, lt->tid);
	read_comm(path, name);
	if (!name[0] || !strcmp(name, lt->comm[0] ? lt->comm : lp->comm))
		return 0;
	memcpy(lt->comm, name, sizeof(lt->comm));
	return lv->out->comm(lv->out, lp->pid, lt->tid, name, strlen(name));
}

static struct lthread *lthread_find(struct live *lv, u32 tid)
{
	struct lthread *lt;

	hash_for_each_possible(lv->threads, lt, node, tid)
		if (lt->tid == tid)
			return lt;
	return NULL;
}

/* A thread of @lp other than its main thread, whose name is its own. */
static struct lthread *lthread_new(struct live *lv, struct lproc *lp, u32 tid)
{
	struct lthread *lt = lthread_find(lv, tid);

	if (lt && lt->lp == lp)
		return lt;
	if (!lt) {
		lt = xcalloc(1, sizeof(*lt));
		lt->tid = tid;
		hash_add(lv->threads, &lt->node, tid);
	} else {
		/* An id used again, its exit not read yet. */
		hlist_del(&lt->in_proc);
		lt->comm[0] = 0;
		lt->checked = 0;
	}
	lt->lp = lp;
	hlist_add_head(&lt->in_proc, &lp->lthreads);
	return lt;
}

static void lthread_free(struct lthread *lt)
{
	hash_del(&lt->node);
	hlist_del(&lt->in_proc);
	free(lt);
}

/*
 * The process's last thread exited: forget it.  Its pid may name another
 * process next, which gets snapshots of its own.
 */
static void lproc_free(struct lproc *lp)
{
	struct hlist_node *tmp;
	struct lthread *lt;

	hlist_for_each_entry_safe(lt, tmp, &lp->lthreads, in_proc)
		lthread_free(lt);
	hash_del(&lp->node);
	mapset_free(&lp->maps);
	free(lp->text);
	free(lp->files);
	free(lp);
}

/*
 * The process's pid in its own pid namespace, a container's: the last
 * of NSpid in /proc/PID/status (one per level of nesting, up to 32);
 * @pid where it says none.
 */
static u32 read_ns_pid(u32 pid)
{
	unsigned long ns[32];
	size_t n = read_status(pid, "\nNSpid:", ns, ARRAY_SIZE(ns));

	return n && ns[n - 1] <= UINT32_MAX ? ns[n - 1] : pid;
}

/*
 * Send what the process's JIT compiler added to its map since the last
 * look: perf's /tmp/perf-PID.map, where perf finds it, in the process's
 * own mount namespace (through /proc/PID/root: a container's /tmp is its
 * own) and named by its pid in its own pid namespace.  Whole lines only;
 * all of it again when the file was replaced.  As perf does, only a
 * regular file of the user's or root's, and not through a symbolic link.
 */
static int send_jit(struct live *lv, struct lproc *lp)
{
	char path[96], *text, *nl;
	struct stat sb;
	size_t len;
	bool whole;
	ssize_t n;
	int fd, ret;

	if (lp->gone)
		return 0;
	if (!lp->ns_pid)
		lp->ns_pid = read_ns_pid(lp->pid);
	snprintf(path, sizeof(path), "/proc/%u/root/tmp/perf-%u.map", lp->pid,
		 lp->ns_pid);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) ||
	    (sb.st_uid != geteuid() && sb.st_uid != 0)) {
		close(fd);
		return 0;
	}
	whole = sb.st_ino != lp->jit_ino || sb.st_dev != lp->jit_dev ||
		sb.st_size < lp->jit_sent;
	if (whole)
		lp->jit_sent = 0;
	len = sb.st_size - lp->jit_sent;
	if (len > MAX_JIT)
		len = MAX_JIT;
	text = len ? xmalloc(len) : NULL;
	n = len ? pread(fd, text, len, lp->jit_sent) : 0;
	close(fd);
	nl = n > 0 ? memrchr(text, '\n', n) : NULL;
	ret = 0;
	if (nl) {
		len = nl + 1 - text;
		ret = lv->out->jit(lv->out, lp->pid, lp->ns_pid, whole, text,
				   len);
		lp->jit_ino = sb.st_ino;
		lp->jit_dev = sb.st_dev;
		lp->jit_sent += len;
	}
	free(text);
	return ret;
}

/*
 * Send /proc/PID/maps (and the vDSO) if it changed since last time, and
 * what the process's JIT map gained.
 */
int snapshot(struct live *lv, struct lproc *lp)
{
	struct lthread *lt;
	struct mapset snap;
	char path[64], *text;
	u32 ppid;
	size_t len;
	int ret;

	if (lp->gone)
		return 0;
	if (send_comm(lv, lp) || send_jit(lv, lp))
		return -1;
	hlist_for_each_entry(lt, &lp->lthreads, in_proc)
		if (send_thread_comm(lv, lt))
			return -1;
	snprintf(path, sizeof(path), "/proc/%u/maps", lp->pid);
	text = read_proc(path, &len, MAX_MAPS);
	if (!text) {
		if (errno == ENOENT || errno == ESRCH)
			lp->gone = true;
		return 0;
	}
	/* Empty: the process is a zombie, and its last snapshot stands. */
	if (!len || (lp->text && len == lp->len && !memcmp(text, lp->text, len))) {
		free(text);
		return 0;
	}
	ppid = lp->text ? 0 : read_ppid(lp->pid);
	if (lv->out->maps(lv->out, lp->pid, ppid, text, len)) {
		free(text);
		return -1;
	}
	free(lp->text);
	lp->text = text;
	lp->len = len;
	mapset_parse(text, len, &snap);
	ret = send_vdso(lv, lp, &snap);
	if (!ret)
		ret = send_moved_files(lv, lp, &snap);
	mapset_merge(&lp->maps, &snap);
	return ret;
}

/*
 * A record's address: outside every mapping known, a fresh snapshot of
 * the process; in code of no file, what its JIT map gained.  Each once
 * per read().
 */
static int check_addr(struct live *lv, struct lproc *lp, u64 addr)
{
	const struct mapping *m;

	if (!addr || lp->gone)
		return 0;
	m = mapset_find(&lp->maps, addr);
	if (!m && lp->checked != lv->reads) {
		lp->checked = lv->reads;
		return snapshot(lv, lp);
	}
	if (m && mapping_in_no_file(m) && lp->jit_checked != lv->reads) {
		lp->jit_checked = lv->reads;
		return send_jit(lv, lp);
	}
	return 0;
}

/*
 * The format of the event a marker names, once per event: asked for as the
 * marker is read, since the event may be deleted (then the marker prints
 * undecoded).
 */
static int send_format(struct live *lv, struct stream *s, u32 id, u32 gen)
{
	struct bts_event_format e = {
		.size = sizeof(e),
		.id = id,
		.gen = gen,
	};
	char *text = NULL;
	size_t i;
	int ret;

	for (i = 0; i < lv->nformats; i++)
		if (lv->formats[i].id == id && lv->formats[i].gen == gen)
			return 0;
	lv->formats = xrealloc(lv->formats,
			       (lv->nformats + 1) * sizeof(*lv->formats));
	lv->formats[lv->nformats].id = id;
	lv->formats[lv->nformats].gen = gen;
	lv->nformats++;
	do {
		text = xrealloc(text, e.len ? e.len : 256);
		e.len = e.len ? e.len : 256;
		e.format = (uintptr_t)text;
		ret = ioctl(s->fd, BTS_IOC_EVENT_FORMAT, &e);
	} while (ret && errno == ENOSPC);
	if (!ret)
		ret = lv->out->event_format(lv->out, id, gen, text,
					    strlen(text));
	else if (errno != ENOENT)
		warn(BTS_DEV ": the format of event %u", id);
	free(text);
	return ret > 0 ? 0 : ret;
}

/*
 * A THREAD record of thread @tid of @lp: a process seen for the first
 * time, or a first thread where none ran (a pid used again, or a process
 * whose first snapshot came before it ran), gets a snapshot; a thread's
 * name is looked at once per read() that has its records (most threads
 * name themselves as they start, and are gone by the time their last
 * records are read); after its last thread exits, the process is
 * forgotten.
 */
static int thread_event(struct live *lv, struct stream *s, struct lproc *lp,
			u32 tid, unsigned int event, bool created)
{
	struct lthread *lt;

	if (event == BTS_THREAD_NEW && !lp->threads++ && !created) {
		lp->gone = false;
		created = true;
	}
	if (created) {
		lp->checked = lv->reads;
		if (snapshot(lv, lp))
			return -1;
	}
	lt = tid != lp->pid ? lthread_find(lv, tid) : NULL;
	if (lt && lt->lp != lp)
		lt = NULL;
	if (event == BTS_THREAD_NEW && tid != lp->pid)
		lt = lthread_new(lv, lp, tid);
	if (event != BTS_THREAD_EXIT) {
		if (!lt || lt->checked == lv->reads)
			return 0;
		lt->checked = lv->reads;
		return send_thread_comm(lv, lt);
	}
	if (lt)
		lthread_free(lt);
	if (lp->threads && !--lp->threads) {
		lproc_free(lp);
		s->pid = 0;
	}
	return 0;
}

/*
 * Before records go out, make sure the mappings they need went out first:
 * a new process's, and a fresh snapshot (once per read) of a process when
 * a record points outside every mapping known.
 */
static int prescan(struct live *lv, struct stream *s,
		   const struct bts_record *r, size_t n)
{
	struct lproc *lp = NULL;
	bool created;
	size_t i;

	if (s->pid)
		lp = lproc_get(lv, s->pid, &created);
	for (i = 0; i < n; i++, r++) {
		if (BTS_RECORD_IS_PSEUDO(r->from)) {
			switch (BTS_PSEUDO_TYPE(r->from)) {
			case BTS_PSEUDO_THREAD:
				s->pid = r->flags;
				lp = lproc_get(lv, s->pid, &created);
				if (thread_event(lv, s, lp, r->to,
						 BTS_PSEUDO_ARG(r->from), created))
					return -1;
				if (!s->pid)
					lp = NULL;
				break;
			case BTS_PSEUDO_MARKER:
				if (send_format(lv, s, BTS_MARKER_ID(r->flags),
						BTS_MARKER_GEN(r->flags)))
					return -1;
				break;
			case BTS_PSEUDO_KERNEL:
				if (lp && (check_addr(lv, lp, r->to) ||
					   check_addr(lv, lp, r->flags)))
					return -1;
				break;
			case BTS_PSEUDO_MAP:
				/*
				 * The old program's mappings would hide
				 * the new one's code, a JIT's among it.
				 */
				if (lp && BTS_MAP_EVENT(r->from) == BTS_MAP_EXEC)
					mapset_free(&lp->maps);
				if (BTS_MAP_EVENT(r->from) == BTS_MAP_COMM)
					lv->kernel_names = true;
				break;
			}
		} else if (lp && (check_addr(lv, lp, r->from) ||
				  check_addr(lv, lp, r->to))) {
			return -1;
		}
	}
	return 0;
}

static int read_stream(struct live *lv, size_t idx)
{
	struct stream *s = &lv->s[idx];
	ssize_t n;

	n = read(s->fd, lv->buf, sizeof(lv->buf));
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		warn(BTS_DEV ": read");
		s->eof = true;
		return -1;
	}
	if (n == 0) {
		s->eof = true;
		return 0;
	}
	if (n % sizeof(struct bts_record)) {
		warnx(BTS_DEV ": read() returned %zd bytes, not whole records",
		      n);
		return -1;
	}
	n /= sizeof(struct bts_record);
	lv->reads++;
	lv->records += n;
	if (prescan(lv, s, lv->buf, n))
		return -1;
	return lv->out->records(lv->out, idx, lv->buf, n);
}

/* kernel.perf_event_paranoid, or INT_MIN if it cannot be read */
static int perf_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int level = INT_MIN;

	if (f) {
		if (fscanf(f, "%d", &level) != 1)
			level = INT_MIN;
		fclose(f);
	}
	return level;
}

int open_dev(void)
{
	int fd = open(BTS_DEV, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	if (errno == ENOENT || errno == ENODEV || errno == ENXIO)
		warnx("this kernel has no BTS branch tracing (" BTS_DEV
		      " missing); boot the bts kernel on a CPU with BTS");
	else if (errno == EACCES && access(BTS_DEV, R_OK))
		warnx(BTS_DEV ": permission denied (the device's mode does not let you read it)");
	else if (errno == EACCES && perf_paranoid() > 2)
		warnx(BTS_DEV ": unprivileged branch tracing is off (kernel.perf_event_paranoid=%d); an administrator can allow it with 'sysctl kernel.perf_event_paranoid=2', or run this with CAP_PERFMON",
		      perf_paranoid());
	else if (errno == EACCES)
		warnx(BTS_DEV ": permission denied by the security policy (its perf_event rules)");
	else
		warn(BTS_DEV);
	return -1;
}

static bool other_user(pid_t pid)
{
	char path[64];
	struct stat sb;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	return !stat(path, &sb) && sb.st_uid != geteuid();
}

/* attach_error()'s messages when ptrace is not allowed, %s the target */
#define EPERM_OTHER_USER	"not allowed to trace %s: it belongs to another user (needs ptrace permission)"
#define EPERM_PTRACE_SCOPE	"not allowed to trace %s (needs ptrace permission; see /proc/sys/kernel/yama/ptrace_scope)"

void attach_error(int e, pid_t tid, const char *what)
{
	switch (e) {
	case ESRCH:
		warnx("%s: no such process", what);
		break;
	case EPERM:
	case EACCES:
		if (other_user(tid))
			warnx(EPERM_OTHER_USER, what);
		else
			warnx(EPERM_PTRACE_SCOPE, what);
		break;
	case EBUSY:
		warnx("the thread is traced by as many others as the kernel allows; try again later");
		break;
	case EINVAL:
		warnx(BTS_DEV " rejected the trace settings (is the kernel older than bts-dump?)");
		break;
	case ENOMEM:
		warnx("not enough memory for the trace buffers; try a smaller --size or --ring");
		break;
	case EOPNOTSUPP:
		warnx("--markers: this kernel puts no user_events into branch traces (CONFIG_USER_EVENTS_BTS)");
		break;
	case EDQUOT:
		warnx("your trace buffers would pass the per-user limit (sysctl kernel.bts_user_max_kb); try a smaller --size or --ring");
		break;
	default:
		warnx("cannot trace %s: %s", what, strerror(e));
		break;
	}
}

/* Attach @fd to thread @tid; on failure returns the errno. */
int attach(struct live *lv, int fd, pid_t tid)
{
	const struct opts *o = lv->o;
	struct bts_attach a = {
		.size = sizeof(a),
		.pid = tid,
	};
	int ret;

	if (!o->no_inherit)
		a.flags |= BTS_ATTACH_INHERIT;
	if (o->ring) {
		a.mode = BTS_MODE_RING;
		a.nr_records = o->ring;
	} else {
		a.mode = BTS_MODE_CONTINUOUS;
		a.nr_records = o->size;
		if (!o->lossy)
			a.flags |= BTS_ATTACH_LOSSLESS;
	}
	/*
	 * The mapping changes in stream order symbolize each branch with
	 * what was mapped when it ran; a kernel without them (EINVAL for
	 * the flag) leaves the /proc snapshots alone to do it.
	 */
	a.flags |= BTS_ATTACH_MAPS;
	if (o->markers) {
		a.flags |= BTS_ATTACH_MARKERS;
		a.markers = (uintptr_t)o->markers_glob;
	}
	ret = ioctl(fd, BTS_IOC_ATTACH, &a);
	if (ret && errno == EINVAL) {
		a.flags &= ~BTS_ATTACH_MAPS;
		ret = ioctl(fd, BTS_IOC_ATTACH, &a);
	}
	if (ret)
		return errno;
	lv->s = xrealloc(lv->s, (lv->ns + 1) * sizeof(*lv->s));
	lv->s[lv->ns].fd = fd;
	lv->s[lv->ns].eof = false;
	lv->s[lv->ns].pid = 0;
	lv->ns++;
	return 0;
}

void detach_all(struct live *lv)
{
	size_t i;

	if (lv->detached)
		return;
	for (i = 0; i < lv->ns; i++)
		if (ioctl(lv->s[i].fd, BTS_IOC_DETACH, 0))
			warn(BTS_DEV ": detach");
	lv->detached = true;
}

static void progress(struct live *lv, bool last)
{
	struct bts_status st, sum = { 0 };
	bool tty = isatty(STDERR_FILENO);
	size_t i;

	for (i = 0; i < lv->ns; i++) {
		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		if (ioctl(lv->s[i].fd, BTS_IOC_STATUS, &st))
			continue;
		sum.threads += st.threads;
		sum.live += st.live;
		sum.lost += st.lost;
	}
	fprintf(stderr, "%sbts-dump: %llu records read, %u threads (%u running), %llu lost%s",
		tty ? "\r" : "", lv->records, sum.threads, sum.live,
		(unsigned long long)sum.lost, tty && !last ? "\033[K" : "\n");
	lv->progress_shown = true;
}

/* The traced threads' losses and the threads left untraced, summed. */
void losses(struct live *lv, struct bts_status *sum)
{
	struct bts_status st;
	size_t i;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < lv->ns; i++) {
		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		if (ioctl(lv->s[i].fd, BTS_IOC_STATUS, &st))
			continue;
		sum->lost += st.lost;
		sum->untraced += st.untraced;
	}
}

/*
 * A thread's exit stop: a process's last mappings, or a thread's last
 * name (its records may all be read after it is gone).
 */
static int exit_stop(struct live *lv, u32 tid)
{
	struct lproc *lp = lproc_find(lv, tid);
	struct lthread *lt;
	u32 pid;

	if (lp)
		return snapshot(lv, lp);
	lt = lthread_find(lv, tid);
	if (!lt) {
		pid = read_tgid(tid);
		lp = pid && pid != tid ? lproc_find(lv, pid) : NULL;
		if (!lp)
			return 0;
		lt = lthread_new(lv, lp, tid);
	}
	return send_thread_comm(lv, lt);
}

/*
 * The ptrace stops of the command and of the processes and threads it
 * creates: let them run, taking a snapshot of a process's mappings when
 * it appears, execs and exits, and a thread's name when it exits.
 * @block: until the command is gone.
 */
int child_events(struct live *lv, bool block)
{
	struct lproc *lp;
	bool created;
	int st, sig;
	pid_t w;

	while (!block || !lv->child_done) {
		w = waitpid(-1, &st, __WALL | (block ? 0 : WNOHANG));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (w == lv->child) {
				lv->child_done = true;
				lv->child_status = st;
			}
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		sig = WSTOPSIG(st);
		switch (st >> 16) {
		case PTRACE_EVENT_STOP:
			/* A group stop: stay stopped until SIGCONT. */
			if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
			    sig == SIGTTOU) {
				ptrace(PTRACE_LISTEN, w, 0, 0);
				break;
			}
			/* A new thread's first stop: nothing to see yet. */
			if (read_tgid(w) != (u32)w) {
				ptrace(PTRACE_CONT, w, 0, 0);
				break;
			}
			/* A new process's. */
			fallthrough;
		case PTRACE_EVENT_EXEC:
			lp = lproc_get(lv, w, &created);
			/* Nothing of an old program is mapped any more. */
			mapset_free(&lp->maps);
			if (snapshot(lv, lp))
				return -1;
			ptrace(PTRACE_CONT, w, 0, 0);
			break;
		case PTRACE_EVENT_EXIT:
			if (exit_stop(lv, w))
				return -1;
			ptrace(PTRACE_CONT, w, 0, 0);
			break;
		case PTRACE_EVENT_FORK:
		case PTRACE_EVENT_VFORK:
		case PTRACE_EVENT_CLONE:
			ptrace(PTRACE_CONT, w, 0, 0);
			break;
		default:
			/* A signal for the process: deliver it. */
			ptrace(PTRACE_CONT, w, 0, sig);
			break;
		}
	}
	return 0;
}

/*
 * SIGINT and SIGQUIT from the terminal reach the command too, and
 * SIGTERM and SIGHUP are passed on to it: while it runs, its end ends the
 * trace.  Otherwise the first signal detaches (what was recorded is still
 * printed) and a second one stops reading.
 */
static int on_signals(struct live *lv)
{
	struct signalfd_siginfo si;
	bool running;

	while (read(lv->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			if (lv->child && child_events(lv, false))
				return -1;
			continue;
		}
		running = lv->child && !lv->child_done;
		if (running && (si.ssi_signo == SIGINT || si.ssi_signo == SIGQUIT))
			continue;
		if (running) {
			kill(lv->child, si.ssi_signo);
			continue;
		}
		if (lv->detached)
			lv->abandon = true;
		detach_all(lv);
	}
	return 0;
}

/* CLOCK_MONOTONIC, the kernel's clock for its stamps of returns. */
static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static u64 now_ms(void)
{
	return now_ns() / 1000000;
}

static int periodic(struct live *lv)
{
	struct lproc *lp;
	size_t b;

	/* ld.so and dlopen() map libraries after the first snapshot. */
	hash_for_each(lv->procs, b, lp, node)
		if (snapshot(lv, lp))
			return -1;
	if (lv->o->progress)
		progress(lv, false);
	/* What was traced up to a little while ago is printed now. */
	return lv->out->settle(lv->out, now_ns() -
			       LIVE_SETTLE_SECONDS * 1000000000ULL);
}

/* Read every file until each is at its end. */
int trace_loop(struct live *lv)
{
	struct pollfd *pfd = xcalloc(lv->ns + 1, sizeof(*pfd));
	size_t *idx = xcalloc(lv->ns, sizeof(*idx));
	u64 next = now_ms() + 1000, t;
	size_t i, n;
	int ret = -1;

	for (;;) {
		for (i = 0, n = 0; i < lv->ns; i++) {
			if (lv->s[i].eof)
				continue;
			pfd[n].fd = lv->s[i].fd;
			pfd[n].events = POLLIN;
			idx[n++] = i;
		}
		if (!n || lv->abandon)
			break;
		pfd[n].fd = lv->sigfd;
		pfd[n].events = POLLIN;
		t = now_ms();
		if (poll(pfd, n + 1, t < next ? (int)(next - t) : 0) < 0 &&
		    errno != EINTR) {
			warn("poll");
			goto out;
		}
		if ((pfd[n].revents & POLLIN) && on_signals(lv))
			goto out;
		for (i = 0; i < n; i++)
			if (pfd[i].revents && read_stream(lv, idx[i]))
				goto out;
		if (now_ms() >= next) {
			if (periodic(lv))
				goto out;
			next = now_ms() + 1000;
		}
	}
	ret = 0;
out:
	free(pfd);
	free(idx);
	return ret;
}

void finish_live(struct live *lv)
{
	struct bts_status sum;

	if (lv->o->progress)
		progress(lv, true);
	if (lv->o->quiet)
		return;
	losses(lv, &sum);
	if (sum.untraced)
		warnx("%u threads or processes the command created were not traced (the per-user limit, sysctl kernel.bts_user_max_kb, or no memory): the trace is incomplete",
		      sum.untraced);
	/* A ring overwrites by design. */
	if (sum.lost && !lv->o->ring)
		warnx("%llu records were lost: the trace has gaps (drop --lossy, or use a larger --size)",
		      (unsigned long long)sum.lost);
}
