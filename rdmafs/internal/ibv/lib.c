// lib.c: symbol lookup and calls through the gdv_lib table (see lib.h).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib.h"

// Every function is looked up at the symbol version that carries today's
// ABI (IBVERBS_1.1 superseded IBVERBS_1.0 for most of them), never the
// default binding, so a library that someday moves a default cannot
// silently change a struct under gdsload.
#define REQ(h, field, name, ver) \
	if ((*(void **)(&l->field) = dlvsym((h), (name), (ver))) == NULL) return (name);
#define OPT(h, field, name, ver) *(void **)(&l->field) = dlvsym((h), (name), (ver));

const char *gdv_load(void *v, void *c, struct gdv_lib *l) {
	memset(l, 0, sizeof *l);
	REQ(v, get_device_list, "ibv_get_device_list", "IBVERBS_1.1");
	REQ(v, free_device_list, "ibv_free_device_list", "IBVERBS_1.1");
	REQ(v, get_device_name, "ibv_get_device_name", "IBVERBS_1.1");
	REQ(v, open_device, "ibv_open_device", "IBVERBS_1.1");
	REQ(v, close_device, "ibv_close_device", "IBVERBS_1.1");
	REQ(v, query_device, "ibv_query_device", "IBVERBS_1.1");
	REQ(v, query_port, "ibv_query_port", "IBVERBS_1.1");
	REQ(v, alloc_pd, "ibv_alloc_pd", "IBVERBS_1.1");
	REQ(v, dealloc_pd, "ibv_dealloc_pd", "IBVERBS_1.1");
	REQ(v, reg_mr, "ibv_reg_mr", "IBVERBS_1.1");
	OPT(v, reg_mr_iova2, "ibv_reg_mr_iova2", "IBVERBS_1.8");
	OPT(v, reg_dmabuf_mr, "ibv_reg_dmabuf_mr", "IBVERBS_1.12");
	REQ(v, dereg_mr, "ibv_dereg_mr", "IBVERBS_1.1");
	REQ(v, create_comp_channel, "ibv_create_comp_channel", "IBVERBS_1.0");
	REQ(v, destroy_comp_channel, "ibv_destroy_comp_channel", "IBVERBS_1.0");
	REQ(v, create_cq, "ibv_create_cq", "IBVERBS_1.1");
	REQ(v, destroy_cq, "ibv_destroy_cq", "IBVERBS_1.1");
	REQ(v, get_cq_event, "ibv_get_cq_event", "IBVERBS_1.1");
	REQ(v, ack_cq_events, "ibv_ack_cq_events", "IBVERBS_1.1");
	REQ(v, modify_qp, "ibv_modify_qp", "IBVERBS_1.1");
	REQ(v, wc_status_str, "ibv_wc_status_str", "IBVERBS_1.1");
	REQ(c, create_event_channel, "rdma_create_event_channel", "RDMACM_1.0");
	REQ(c, destroy_event_channel, "rdma_destroy_event_channel", "RDMACM_1.0");
	REQ(c, create_id, "rdma_create_id", "RDMACM_1.0");
	REQ(c, destroy_id, "rdma_destroy_id", "RDMACM_1.0");
	REQ(c, bind_addr, "rdma_bind_addr", "RDMACM_1.0");
	REQ(c, resolve_addr, "rdma_resolve_addr", "RDMACM_1.0");
	REQ(c, resolve_route, "rdma_resolve_route", "RDMACM_1.0");
	REQ(c, create_qp, "rdma_create_qp", "RDMACM_1.0");
	REQ(c, destroy_qp, "rdma_destroy_qp", "RDMACM_1.0");
	REQ(c, connect, "rdma_connect", "RDMACM_1.0");
	REQ(c, listen, "rdma_listen", "RDMACM_1.0");
	REQ(c, accept, "rdma_accept", "RDMACM_1.0");
	REQ(c, reject, "rdma_reject", "RDMACM_1.0");
	REQ(c, disconnect, "rdma_disconnect", "RDMACM_1.0");
	REQ(c, get_cm_event, "rdma_get_cm_event", "RDMACM_1.0");
	REQ(c, ack_cm_event, "rdma_ack_cm_event", "RDMACM_1.0");
	REQ(c, event_str, "rdma_event_str", "RDMACM_1.0");
	REQ(c, get_devices, "rdma_get_devices", "RDMACM_1.0");
	REQ(c, free_devices, "rdma_free_devices", "RDMACM_1.0");
	return NULL;
}

int gdv_verbs_abi(void *v) {
	char ver[32];
	int best = 0;
	for (int i = 1; i <= 64; i++) {
		snprintf(ver, sizeof ver, "IBVERBS_1.%d", i);
		// Every version node exports at least one of these.
		static const char *const probe[] = {
			"ibv_get_device_list", "ibv_get_pkey_index", "ibv_qp_to_qp_ex", "ibv_reg_mr_iova",
			"ibv_reg_mr_iova2", "ibv_get_device_index", "ibv_import_device", "_ibv_query_gid_ex",
			"ibv_reg_dmabuf_mr", "ibv_is_fork_initialized", "ibv_query_qp_data_in_order",
			"ibv_reg_mr_ex", "ibv_query_port_speed", "ibv_reg_buf_mr", "ibv_create_comp_cntr", NULL};
		for (int j = 0; probe[j] != NULL; j++) {
			if (dlvsym(v, probe[j], ver) != NULL) {
				best = i;
				break;
			}
		}
	}
	return best;
}

void **gdv_get_device_list(struct gdv_lib *l, int *n) { return l->get_device_list(n); }
void gdv_free_device_list(struct gdv_lib *l, void **list) { l->free_device_list(list); }
const char *gdv_get_device_name(struct gdv_lib *l, void *dev) { return l->get_device_name(dev); }
struct gdv_context *gdv_open_device(struct gdv_lib *l, void *dev) { return l->open_device(dev); }
int gdv_close_device(struct gdv_lib *l, struct gdv_context *ctx) { return l->close_device(ctx); }
int gdv_query_device(struct gdv_lib *l, struct gdv_context *ctx, struct gdv_device_attr *attr) {
	memset(attr, 0, sizeof *attr);
	return l->query_device(ctx, attr);
}

int gdv_query_port(struct gdv_lib *l, struct gdv_context *ctx, uint8_t port, struct gdv_port_attr *out) {
	union {
		struct gdv_port_attr a;
		unsigned char raw[GDV_PORT_ATTR_BUF];
	} buf;
	memset(&buf, 0, sizeof buf);
	int rc = l->query_port(ctx, port, &buf);
	*out = buf.a;
	return rc;
}

struct gdv_pd *gdv_alloc_pd(struct gdv_lib *l, struct gdv_context *ctx) { return l->alloc_pd(ctx); }
int gdv_dealloc_pd(struct gdv_lib *l, struct gdv_pd *pd) { return l->dealloc_pd(pd); }

struct gdv_mr *gdv_reg_mr(struct gdv_lib *l, struct gdv_pd *pd, uintptr_t addr, size_t len, int access) {
	if (access & GDV_ACCESS_RELAXED_ORDERING) {
		if (l->reg_mr_iova2 != NULL)
			return l->reg_mr_iova2(pd, (void *)addr, len, (uint64_t)addr, (unsigned int)access);
		access &= ~GDV_ACCESS_RELAXED_ORDERING;
	}
	return l->reg_mr(pd, (void *)addr, len, access);
}

struct gdv_mr *gdv_reg_dmabuf_mr(struct gdv_lib *l, struct gdv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
                                 int fd, int access) {
	if (l->reg_dmabuf_mr == NULL) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return l->reg_dmabuf_mr(pd, offset, len, iova, fd, access);
}

int gdv_dereg_mr(struct gdv_lib *l, struct gdv_mr *mr) { return l->dereg_mr(mr); }
struct gdv_comp_channel *gdv_create_comp_channel(struct gdv_lib *l, struct gdv_context *ctx) {
	return l->create_comp_channel(ctx);
}
int gdv_destroy_comp_channel(struct gdv_lib *l, struct gdv_comp_channel *ch) { return l->destroy_comp_channel(ch); }
struct gdv_cq *gdv_create_cq(struct gdv_lib *l, struct gdv_context *ctx, int cqe, struct gdv_comp_channel *ch) {
	return l->create_cq(ctx, cqe, NULL, ch, 0);
}
int gdv_destroy_cq(struct gdv_lib *l, struct gdv_cq *cq) { return l->destroy_cq(cq); }

int gdv_cq_event(struct gdv_lib *l, struct gdv_comp_channel *ch) {
	struct gdv_cq *cq = NULL;
	void *ctx = NULL;
	if (l->get_cq_event(ch, &cq, &ctx) != 0) return -1;
	l->ack_cq_events(cq, 1);
	return cq->context->ops.req_notify_cq(cq, 0);
}

int gdv_req_notify_cq(struct gdv_cq *cq) { return cq->context->ops.req_notify_cq(cq, 0); }
int gdv_poll_cq(struct gdv_cq *cq, int n, struct gdv_wc *wc) { return cq->context->ops.poll_cq(cq, n, wc); }

int gdv_post_send(struct gdv_qp *qp, uint64_t wr_id, int opcode, int signaled, uint64_t addr, uint32_t len,
                  uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t imm) {
	struct gdv_sge sge = {.addr = addr, .length = len, .lkey = lkey};
	struct gdv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = len > 0 ? 1 : 0;
	wr.opcode = opcode;
	wr.send_flags = signaled ? GDV_SEND_SIGNALED : 0;
	wr.imm_data = imm;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return qp->context->ops.post_send(qp, &wr, &bad);
}

int gdv_post_recv(struct gdv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey) {
	struct gdv_sge sge = {.addr = addr, .length = len, .lkey = lkey};
	struct gdv_recv_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return qp->context->ops.post_recv(qp, &wr, &bad);
}

int gdv_qp_to_error(struct gdv_lib *l, struct gdv_qp *qp) {
	struct gdv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = GDV_QPS_ERR;
	return l->modify_qp(qp, &a, GDV_QP_STATE);
}

const char *gdv_wc_status_str(struct gdv_lib *l, int status) { return l->wc_status_str(status); }

struct gdv_event_channel *gdv_create_event_channel(struct gdv_lib *l) { return l->create_event_channel(); }
void gdv_destroy_event_channel(struct gdv_lib *l, struct gdv_event_channel *ch) { l->destroy_event_channel(ch); }
int gdv_create_id(struct gdv_lib *l, struct gdv_event_channel *ch, struct gdv_cm_id **id) {
	return l->create_id(ch, id, NULL, GDV_PS_TCP);
}
int gdv_destroy_id(struct gdv_lib *l, struct gdv_cm_id *id) { return l->destroy_id(id); }
int gdv_bind_addr(struct gdv_lib *l, struct gdv_cm_id *id, struct sockaddr *addr) { return l->bind_addr(id, addr); }
int gdv_resolve_addr(struct gdv_lib *l, struct gdv_cm_id *id, struct sockaddr *src, struct sockaddr *dst, int timeout_ms) {
	return l->resolve_addr(id, src, dst, timeout_ms);
}
int gdv_resolve_route(struct gdv_lib *l, struct gdv_cm_id *id, int timeout_ms) { return l->resolve_route(id, timeout_ms); }

int gdv_create_qp(struct gdv_lib *l, struct gdv_cm_id *id, struct gdv_pd *pd, struct gdv_cq *cq, uint32_t send_wr,
                  uint32_t recv_wr) {
	struct gdv_qp_init_attr a;
	memset(&a, 0, sizeof a);
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = GDV_QPT_RC;
	a.cap.max_send_wr = send_wr;
	a.cap.max_recv_wr = recv_wr;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	return l->create_qp(id, pd, &a);
}

void gdv_destroy_qp(struct gdv_lib *l, struct gdv_cm_id *id) { l->destroy_qp(id); }

int gdv_connect(struct gdv_lib *l, struct gdv_cm_id *id, const void *priv, uint8_t len, uint8_t responder_resources,
                uint8_t initiator_depth) {
	struct gdv_conn_param p;
	memset(&p, 0, sizeof p);
	p.private_data = priv;
	p.private_data_len = len;
	p.responder_resources = responder_resources;
	p.initiator_depth = initiator_depth;
	p.retry_count = 7;
	p.rnr_retry_count = 7; // 7: retry for ever while the peer has no receive posted
	return l->connect(id, &p);
}

int gdv_listen(struct gdv_lib *l, struct gdv_cm_id *id, int backlog) { return l->listen(id, backlog); }

int gdv_accept(struct gdv_lib *l, struct gdv_cm_id *id, uint8_t responder_resources, uint8_t initiator_depth) {
	struct gdv_conn_param p;
	memset(&p, 0, sizeof p);
	p.responder_resources = responder_resources;
	p.initiator_depth = initiator_depth;
	p.rnr_retry_count = 7;
	return l->accept(id, &p);
}

int gdv_reject(struct gdv_lib *l, struct gdv_cm_id *id, const void *priv, uint8_t len) { return l->reject(id, priv, len); }
int gdv_disconnect(struct gdv_lib *l, struct gdv_cm_id *id) { return l->disconnect(id); }
const char *gdv_event_str(struct gdv_lib *l, int event) { return l->event_str(event); }
struct gdv_context **gdv_get_devices(struct gdv_lib *l, int *n) { return l->get_devices(n); }
void gdv_free_devices(struct gdv_lib *l, struct gdv_context **list) { l->free_devices(list); }

int gdv_next_cm_event(struct gdv_lib *l, struct gdv_event_channel *ch, struct gdv_cm_ev *out) {
	struct gdv_cm_event *ev = NULL;
	if (l->get_cm_event(ch, &ev) != 0) return -1;
	memset(out, 0, sizeof *out);
	out->id = ev->id;
	out->listen_id = ev->listen_id;
	out->event = ev->event;
	out->status = ev->status;
	// Private data rides on connect requests, replies and rejects. Over
	// InfiniBand it arrives padded with zeros to the CM message's room.
	if ((ev->event == GDV_CM_EVENT_CONNECT_REQUEST || ev->event == GDV_CM_EVENT_ESTABLISHED ||
	     ev->event == GDV_CM_EVENT_REJECTED) &&
	    ev->param.conn.private_data != NULL) {
		out->priv_len = ev->param.conn.private_data_len;
		memcpy(out->priv, ev->param.conn.private_data, out->priv_len);
	}
	l->ack_cm_event(ev);
	return 0;
}

struct sockaddr_storage *gdv_id_src(struct gdv_cm_id *id) { return &id->src_storage; }
struct sockaddr_storage *gdv_id_dst(struct gdv_cm_id *id) { return &id->dst_storage; }
