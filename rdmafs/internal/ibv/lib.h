// lib.h: the libibverbs and librdmacm functions gdsload calls, looked up
// by symbol version with dlvsym, and the C helpers that call them (cgo
// cannot call through a function pointer).
#ifndef GDV_LIB_H
#define GDV_LIB_H

#include "abi.h"

struct gdv_lib {
	// libibverbs
	void **(*get_device_list)(int *n);
	void (*free_device_list)(void **list);
	const char *(*get_device_name)(void *dev);
	struct gdv_context *(*open_device)(void *dev);
	int (*close_device)(struct gdv_context *ctx);
	int (*query_device)(struct gdv_context *ctx, struct gdv_device_attr *attr);
	int (*query_port)(struct gdv_context *ctx, uint8_t port, void *attr);
	struct gdv_pd *(*alloc_pd)(struct gdv_context *ctx);
	int (*dealloc_pd)(struct gdv_pd *pd);
	struct gdv_mr *(*reg_mr)(struct gdv_pd *pd, void *addr, size_t len, int access);
	struct gdv_mr *(*reg_mr_iova2)(struct gdv_pd *pd, void *addr, size_t len, uint64_t iova, unsigned int access); // optional: IBVERBS_1.8
	struct gdv_mr *(*reg_dmabuf_mr)(struct gdv_pd *pd, uint64_t offset, size_t len, uint64_t iova, int fd, int access); // optional: IBVERBS_1.12
	int (*dereg_mr)(struct gdv_mr *mr);
	struct gdv_comp_channel *(*create_comp_channel)(struct gdv_context *ctx);
	int (*destroy_comp_channel)(struct gdv_comp_channel *ch);
	struct gdv_cq *(*create_cq)(struct gdv_context *ctx, int cqe, void *cq_context, struct gdv_comp_channel *ch, int comp_vector);
	int (*destroy_cq)(struct gdv_cq *cq);
	int (*get_cq_event)(struct gdv_comp_channel *ch, struct gdv_cq **cq, void **cq_context);
	void (*ack_cq_events)(struct gdv_cq *cq, unsigned int n);
	int (*modify_qp)(struct gdv_qp *qp, struct gdv_qp_attr *attr, int mask);
	const char *(*wc_status_str)(int status);
	// librdmacm
	struct gdv_event_channel *(*create_event_channel)(void);
	void (*destroy_event_channel)(struct gdv_event_channel *ch);
	int (*create_id)(struct gdv_event_channel *ch, struct gdv_cm_id **id, void *context, int ps);
	int (*destroy_id)(struct gdv_cm_id *id);
	int (*bind_addr)(struct gdv_cm_id *id, struct sockaddr *addr);
	int (*resolve_addr)(struct gdv_cm_id *id, struct sockaddr *src, struct sockaddr *dst, int timeout_ms);
	int (*resolve_route)(struct gdv_cm_id *id, int timeout_ms);
	int (*create_qp)(struct gdv_cm_id *id, struct gdv_pd *pd, struct gdv_qp_init_attr *attr);
	void (*destroy_qp)(struct gdv_cm_id *id);
	int (*connect)(struct gdv_cm_id *id, struct gdv_conn_param *p);
	int (*listen)(struct gdv_cm_id *id, int backlog);
	int (*accept)(struct gdv_cm_id *id, struct gdv_conn_param *p);
	int (*reject)(struct gdv_cm_id *id, const void *priv, uint8_t len);
	int (*disconnect)(struct gdv_cm_id *id);
	int (*get_cm_event)(struct gdv_event_channel *ch, struct gdv_cm_event **ev);
	int (*ack_cm_event)(struct gdv_cm_event *ev);
	const char *(*event_str)(int event);
	struct gdv_context **(*get_devices)(int *n);
	void (*free_devices)(struct gdv_context **list);
};

// gdv_load fills l from the libibverbs handle v and the librdmacm handle c;
// it returns NULL, or the name of the first required symbol missing.
const char *gdv_load(void *v, void *c, struct gdv_lib *l);
// gdv_verbs_abi returns the highest IBVERBS_1.x version handle v defines
// (0 when none answers).
int gdv_verbs_abi(void *v);

// Calls through the table. Each returns what the library returns; errno is
// left as the library set it.
void **gdv_get_device_list(struct gdv_lib *l, int *n);
void gdv_free_device_list(struct gdv_lib *l, void **list);
const char *gdv_get_device_name(struct gdv_lib *l, void *dev);
struct gdv_context *gdv_open_device(struct gdv_lib *l, void *dev);
int gdv_close_device(struct gdv_lib *l, struct gdv_context *ctx);
int gdv_query_device(struct gdv_lib *l, struct gdv_context *ctx, struct gdv_device_attr *attr);
// gdv_query_port fills out from a zeroed buffer of GDV_PORT_ATTR_BUF bytes.
int gdv_query_port(struct gdv_lib *l, struct gdv_context *ctx, uint8_t port, struct gdv_port_attr *out);
struct gdv_pd *gdv_alloc_pd(struct gdv_lib *l, struct gdv_context *ctx);
int gdv_dealloc_pd(struct gdv_lib *l, struct gdv_pd *pd);
// gdv_reg_mr registers [addr, addr+len) with access; optional access flags
// (relaxed ordering) go through ibv_reg_mr_iova2, which drops those the
// device does not support, or are dropped when the library lacks it.
struct gdv_mr *gdv_reg_mr(struct gdv_lib *l, struct gdv_pd *pd, uintptr_t addr, size_t len, int access);
struct gdv_mr *gdv_reg_dmabuf_mr(struct gdv_lib *l, struct gdv_pd *pd, uint64_t offset, size_t len, uint64_t iova, int fd, int access);
int gdv_dereg_mr(struct gdv_lib *l, struct gdv_mr *mr);
struct gdv_comp_channel *gdv_create_comp_channel(struct gdv_lib *l, struct gdv_context *ctx);
int gdv_destroy_comp_channel(struct gdv_lib *l, struct gdv_comp_channel *ch);
struct gdv_cq *gdv_create_cq(struct gdv_lib *l, struct gdv_context *ctx, int cqe, struct gdv_comp_channel *ch);
int gdv_destroy_cq(struct gdv_lib *l, struct gdv_cq *cq);
// gdv_cq_event takes one completion event from ch (non-blocking: -1 with
// errno EAGAIN when none), acknowledges it and re-arms the CQ.
int gdv_cq_event(struct gdv_lib *l, struct gdv_comp_channel *ch);
int gdv_req_notify_cq(struct gdv_cq *cq);
int gdv_poll_cq(struct gdv_cq *cq, int n, struct gdv_wc *wc);
int gdv_post_send(struct gdv_qp *qp, uint64_t wr_id, int opcode, int signaled, uint64_t addr, uint32_t len,
                  uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t imm);
int gdv_post_recv(struct gdv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey);
int gdv_qp_to_error(struct gdv_lib *l, struct gdv_qp *qp);
const char *gdv_wc_status_str(struct gdv_lib *l, int status);

struct gdv_event_channel *gdv_create_event_channel(struct gdv_lib *l);
void gdv_destroy_event_channel(struct gdv_lib *l, struct gdv_event_channel *ch);
int gdv_create_id(struct gdv_lib *l, struct gdv_event_channel *ch, struct gdv_cm_id **id);
int gdv_destroy_id(struct gdv_lib *l, struct gdv_cm_id *id);
int gdv_bind_addr(struct gdv_lib *l, struct gdv_cm_id *id, struct sockaddr *addr);
int gdv_resolve_addr(struct gdv_lib *l, struct gdv_cm_id *id, struct sockaddr *src, struct sockaddr *dst, int timeout_ms);
int gdv_resolve_route(struct gdv_lib *l, struct gdv_cm_id *id, int timeout_ms);
int gdv_create_qp(struct gdv_lib *l, struct gdv_cm_id *id, struct gdv_pd *pd, struct gdv_cq *cq,
                  uint32_t send_wr, uint32_t recv_wr);
void gdv_destroy_qp(struct gdv_lib *l, struct gdv_cm_id *id);
int gdv_connect(struct gdv_lib *l, struct gdv_cm_id *id, const void *priv, uint8_t len,
                uint8_t responder_resources, uint8_t initiator_depth);
int gdv_listen(struct gdv_lib *l, struct gdv_cm_id *id, int backlog);
int gdv_accept(struct gdv_lib *l, struct gdv_cm_id *id, uint8_t responder_resources, uint8_t initiator_depth);
int gdv_reject(struct gdv_lib *l, struct gdv_cm_id *id, const void *priv, uint8_t len);
int gdv_disconnect(struct gdv_lib *l, struct gdv_cm_id *id);
const char *gdv_event_str(struct gdv_lib *l, int event);
struct gdv_context **gdv_get_devices(struct gdv_lib *l, int *n);
void gdv_free_devices(struct gdv_lib *l, struct gdv_context **list);

// The addresses of an identifier (rdma_get_local_addr, rdma_get_peer_addr).
struct sockaddr_storage *gdv_id_src(struct gdv_cm_id *id);
struct sockaddr_storage *gdv_id_dst(struct gdv_cm_id *id);

// gdv_cm_event is one rdma_cm event, copied out and acknowledged.
struct gdv_cm_ev {
	struct gdv_cm_id *id;
	struct gdv_cm_id *listen_id;
	int event;
	int status;
	uint8_t priv_len;
	uint8_t priv[255];
};
// gdv_next_cm_event takes one event from ch (non-blocking: -1 with errno
// EAGAIN when none), copies it into out and acknowledges it.
int gdv_next_cm_event(struct gdv_lib *l, struct gdv_event_channel *ch, struct gdv_cm_ev *out);

#endif
