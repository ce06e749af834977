// C helpers for the rdmafs verbs transport (build tag rdma). Included by
// the cgo preambles of verbs_cgo.go and verbs_rdma.go; everything is static
// inline so each includer gets its own copy.
#ifndef GDSLOAD_RDMAFS_VERBS_HELPERS_H
#define GDSLOAD_RDMAFS_VERBS_HELPERS_H
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// ibv_post_send and ibv_poll_cq are static inline in verbs.h: cgo cannot
// call them directly, so these helpers do.

static inline int gdl_device_count(void) {
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	if (l == NULL) return errno ? -errno : 0;
	ibv_free_device_list(l);
	return n;
}

// gdl_rdma_write posts one signaled RDMA WRITE and polls the send CQ for its
// completion. On an RC queue pair a successful completion means the data is
// placed in the responder's memory. Returns 0, -errno, or 1000+wc.status.
static inline int gdl_rdma_write(struct ibv_qp *qp, struct ibv_cq *cq, void *local, uint32_t len,
                          uint32_t lkey, uint64_t raddr, uint32_t rkey, int timeout_ms) {
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;
	struct timespec t0, t;
	memset(&sge, 0, sizeof sge);
	memset(&wr, 0, sizeof wr);
	sge.addr = (uintptr_t)local;
	sge.length = len;
	sge.lkey = lkey;
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	int rc = ibv_post_send(qp, &wr, &bad);
	if (rc) return -rc;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0) return -EIO;
		if (n == 1) return wc.status == IBV_WC_SUCCESS ? 0 : 1000 + (int)wc.status;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms) return -ETIMEDOUT;
	}
}

// gdl_wait_event waits up to timeout_ms for a CM event and acks it,
// copying what the caller needs. Returns 1 with an event, 0 on timeout,
// -errno on error.
static inline int gdl_wait_event(struct rdma_event_channel *ch, int timeout_ms, int *type, int *status,
                          struct rdma_cm_id **id, char *priv, int *privlen) {
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	int rc = poll(&p, 1, timeout_ms);
	if (rc < 0) return -errno;
	if (rc == 0) return 0;
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev)) return errno == EAGAIN ? 0 : -errno;
	*type = ev->event;
	*status = ev->status;
	*id = ev->id;
	*privlen = 0;
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && ev->param.conn.private_data != NULL) {
		int n = ev->param.conn.private_data_len;
		if (n > 56) n = 56;
		memcpy(priv, ev->param.conn.private_data, n);
		*privlen = n;
	}
	rdma_ack_cm_event(ev);
	return 1;
}

static inline int gdl_nonblock(struct rdma_event_channel *ch) {
	int fl = fcntl(ch->fd, F_GETFL);
	return fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

static inline int gdl_resolve(const char *host, const char *port, struct sockaddr_storage *out) {
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc) return -EINVAL;
	memcpy(out, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

// gdl_setup_qp gives id a protection domain, a CQ and an RC queue pair.
static inline int gdl_setup_qp(struct rdma_cm_id *id, struct ibv_pd **pd, struct ibv_cq **cq) {
	*pd = ibv_alloc_pd(id->verbs);
	if (*pd == NULL) return -ENOMEM;
	*cq = ibv_create_cq(id->verbs, 64, NULL, NULL, 0);
	if (*cq == NULL) { ibv_dealloc_pd(*pd); *pd = NULL; return -ENOMEM; }
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof a);
	a.send_cq = *cq;
	a.recv_cq = *cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 64;
	a.cap.max_recv_wr = 1;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, *pd, &a)) {
		int e = errno;
		ibv_destroy_cq(*cq); ibv_dealloc_pd(*pd); *cq = NULL; *pd = NULL;
		return -e;
	}
	return 0;
}

static inline int gdl_accept(struct rdma_cm_id *id) {
	struct rdma_conn_param p;
	memset(&p, 0, sizeof p);
	p.responder_resources = 1;
	p.initiator_depth = 1;
	return rdma_accept(id, &p) ? -errno : 0;
}

static inline int gdl_connect(struct rdma_cm_id *id, const void *priv, int privlen) {
	struct rdma_conn_param p;
	memset(&p, 0, sizeof p);
	p.responder_resources = 1;
	p.initiator_depth = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	p.private_data = priv;
	p.private_data_len = (uint8_t)privlen;
	return rdma_connect(id, &p) ? -errno : 0;
}

static inline int gdl_peer_ip(struct rdma_cm_id *id, char *out, int outlen) {
	struct sockaddr *sa = rdma_get_peer_addr(id);
	const void *src = sa->sa_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)sa)->sin6_addr
	                                             : (const void *)&((struct sockaddr_in *)sa)->sin_addr;
	return inet_ntop(sa->sa_family, src, out, outlen) ? 0 : -errno;
}

// gdl_reg_dmabuf registers len bytes at offset of dma-buf fd for remote
// writes, addressed by the peer from iova (ibv_reg_dmabuf_mr: rdma-core 34+,
// Linux 5.12+, and a provider that supports it). NULL with *err set on
// failure.
static inline struct ibv_mr *gdl_reg_dmabuf(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
                                            int fd, int *err) {
	errno = 0;
	struct ibv_mr *mr = ibv_reg_dmabuf_mr(pd, offset, len, iova, fd,
	                                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	*err = mr ? 0 : (errno ? errno : EOPNOTSUPP);
	return mr;
}

// gdl_reg_addr registers len bytes at a virtual address that Go does not
// own (GPU memory, which the kernel pins through nvidia-peermem) for remote
// writes. NULL with *err set on failure.
static inline struct ibv_mr *gdl_reg_addr(struct ibv_pd *pd, uintptr_t addr, size_t len, int *err) {
	errno = 0;
	struct ibv_mr *mr = ibv_reg_mr(pd, (void *)addr, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	*err = mr ? 0 : (errno ? errno : EINVAL);
	return mr;
}

static inline uint32_t gdl_mr_lkey(struct ibv_mr *mr) { return mr->lkey; }
static inline uint32_t gdl_mr_rkey(struct ibv_mr *mr) { return mr->rkey; }

#endif
