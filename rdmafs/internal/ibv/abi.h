// abi.h: the subset of the libibverbs and librdmacm ABI that gdsload uses,
// declared here (with a gdv_ prefix) so that a plain build needs neither
// libibverbs-dev nor librdmacm-dev. Written from rdma-core's verbs.h and
// rdma_cma.h, which are the reference; abi_test.go compiles static
// assertions of every size, offset and constant below against the real
// headers wherever they are installed (CI installs them).
//
// Rules: a struct gdsload allocates and hands to the library (work
// requests, work completions, init and connection attributes, QP
// attributes, device attributes) is declared whole. A struct only the
// library allocates and gdsload reads (context, CQ, QP, cm_id, cm_event)
// is declared as the prefix holding the fields read. ibv_port_attr has
// grown over releases: it is read from a larger zeroed buffer.
#ifndef GDV_ABI_H
#define GDV_ABI_H

#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct gdv_cq;
struct gdv_qp;
struct gdv_send_wr;
struct gdv_recv_wr;
struct gdv_wc;

// ibv_context_ops: ibv_post_send, ibv_post_recv, ibv_poll_cq and
// ibv_req_notify_cq are static inline in verbs.h and call through here.
struct gdv_context_ops {
	void *_compat_query_device;
	void *_compat_query_port;
	void *_compat_alloc_pd;
	void *_compat_dealloc_pd;
	void *_compat_reg_mr;
	void *_compat_rereg_mr;
	void *_compat_dereg_mr;
	void *alloc_mw;
	void *bind_mw;
	void *dealloc_mw;
	void *_compat_create_cq;
	int (*poll_cq)(struct gdv_cq *cq, int num_entries, struct gdv_wc *wc);
	int (*req_notify_cq)(struct gdv_cq *cq, int solicited_only);
	void *_compat_cq_event;
	void *_compat_resize_cq;
	void *_compat_destroy_cq;
	void *_compat_create_srq;
	void *_compat_modify_srq;
	void *_compat_query_srq;
	void *_compat_destroy_srq;
	void *post_srq_recv;
	void *_compat_create_qp;
	void *_compat_query_qp;
	void *_compat_modify_qp;
	void *_compat_destroy_qp;
	int (*post_send)(struct gdv_qp *qp, struct gdv_send_wr *wr, struct gdv_send_wr **bad_wr);
	int (*post_recv)(struct gdv_qp *qp, struct gdv_recv_wr *wr, struct gdv_recv_wr **bad_wr);
	void *_compat_create_ah;
	void *_compat_destroy_ah;
	void *_compat_attach_mcast;
	void *_compat_detach_mcast;
	void *_compat_async_event;
};

// ibv_context (prefix).
struct gdv_context {
	void *device;
	struct gdv_context_ops ops;
	int cmd_fd;
	int async_fd;
	int num_comp_vectors;
};

// ibv_pd.
struct gdv_pd {
	struct gdv_context *context;
	uint32_t handle;
};

// ibv_mr.
struct gdv_mr {
	struct gdv_context *context;
	struct gdv_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
};

// ibv_comp_channel.
struct gdv_comp_channel {
	struct gdv_context *context;
	int fd;
	int refcnt;
};

// ibv_cq (prefix).
struct gdv_cq {
	struct gdv_context *context;
	struct gdv_comp_channel *channel;
	void *cq_context;
	uint32_t handle;
	int cqe;
};

// ibv_qp (prefix).
struct gdv_qp {
	struct gdv_context *context;
	void *qp_context;
	struct gdv_pd *pd;
	struct gdv_cq *send_cq;
	struct gdv_cq *recv_cq;
	void *srq;
	uint32_t handle;
	uint32_t qp_num;
	int state;
	int qp_type;
};

// ibv_qp_cap.
struct gdv_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

// ibv_qp_init_attr.
struct gdv_qp_init_attr {
	void *qp_context;
	struct gdv_cq *send_cq;
	struct gdv_cq *recv_cq;
	void *srq;
	struct gdv_qp_cap cap;
	int qp_type;
	int sq_sig_all;
};

// ibv_sge.
struct gdv_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

// ibv_mw_bind_info (inside ibv_send_wr).
struct gdv_mw_bind_info {
	void *mr;
	uint64_t addr;
	uint64_t length;
	unsigned int mw_access_flags;
};

// ibv_send_wr.
struct gdv_send_wr {
	uint64_t wr_id;
	struct gdv_send_wr *next;
	struct gdv_sge *sg_list;
	int num_sge;
	int opcode;
	unsigned int send_flags;
	union {
		uint32_t imm_data; // network byte order
		uint32_t invalidate_rkey;
	};
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			void *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
	} wr;
	union {
		struct {
			uint32_t remote_srqn;
		} xrc;
	} qp_type;
	union {
		struct {
			void *mw;
			uint32_t rkey;
			struct gdv_mw_bind_info bind_info;
		} bind_mw;
		struct {
			void *hdr;
			uint16_t hdr_sz;
			uint16_t mss;
		} tso;
	};
};

// ibv_recv_wr.
struct gdv_recv_wr {
	uint64_t wr_id;
	struct gdv_recv_wr *next;
	struct gdv_sge *sg_list;
	int num_sge;
};

// ibv_wc.
struct gdv_wc {
	uint64_t wr_id;
	int status;
	int opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	union {
		uint32_t imm_data; // network byte order
		uint32_t invalidated_rkey;
	};
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

// union ibv_gid, struct ibv_global_route, struct ibv_ah_attr (inside
// ibv_qp_attr).
union gdv_gid {
	uint8_t raw[16];
	struct {
		uint64_t subnet_prefix;
		uint64_t interface_id;
	} global;
};

struct gdv_global_route {
	union gdv_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

struct gdv_ah_attr {
	struct gdv_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
};

// ibv_qp_attr.
struct gdv_qp_attr {
	int qp_state;
	int cur_qp_state;
	int path_mtu;
	int path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned int qp_access_flags;
	struct gdv_qp_cap cap;
	struct gdv_ah_attr ah_attr;
	struct gdv_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint32_t rate_limit;
};

// ibv_device_attr.
struct gdv_device_attr {
	char fw_ver[64];
	uint64_t node_guid;
	uint64_t sys_image_guid;
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	int max_qp;
	int max_qp_wr;
	unsigned int device_cap_flags;
	int max_sge;
	int max_sge_rd;
	int max_cq;
	int max_cqe;
	int max_mr;
	int max_pd;
	int max_qp_rd_atom;
	int max_ee_rd_atom;
	int max_res_rd_atom;
	int max_qp_init_rd_atom;
	int max_ee_init_rd_atom;
	int atomic_cap;
	int max_ee;
	int max_rdd;
	int max_mw;
	int max_raw_ipv6_qp;
	int max_raw_ethy_qp;
	int max_mcast_grp;
	int max_mcast_qp_attach;
	int max_total_mcast_qp_attach;
	int max_ah;
	int max_fmr;
	int max_map_per_fmr;
	int max_srq;
	int max_srq_wr;
	int max_srq_sge;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
};

// ibv_port_attr (prefix: the library may write more).
struct gdv_port_attr {
	int state;
	int max_mtu;
	int active_mtu;
	int gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer;
	uint8_t flags;
};

// GDV_PORT_ATTR_BUF is the buffer ibv_query_port writes into: far larger
// than any ibv_port_attr so far.
#define GDV_PORT_ATTR_BUF 512

// rdma_event_channel.
struct gdv_event_channel {
	int fd;
};

// rdma_cm_id (prefix up to route.addr's two addresses).
struct gdv_cm_id {
	struct gdv_context *verbs;
	struct gdv_event_channel *channel;
	void *context;
	struct gdv_qp *qp;
	union {
		struct sockaddr src_addr;
		struct sockaddr_storage src_storage;
	};
	union {
		struct sockaddr dst_addr;
		struct sockaddr_storage dst_storage;
	};
};

// rdma_conn_param.
struct gdv_conn_param {
	const void *private_data;
	uint8_t private_data_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint32_t qp_num;
};

// rdma_cm_event (prefix: param.conn only).
struct gdv_cm_event {
	struct gdv_cm_id *id;
	struct gdv_cm_id *listen_id;
	int event;
	int status;
	union {
		struct gdv_conn_param conn;
		uint64_t arg;
	} param;
};

// Constants, from the enums of verbs.h and rdma_cma.h.
enum {
	GDV_ACCESS_LOCAL_WRITE = 1,
	GDV_ACCESS_REMOTE_WRITE = 1 << 1,
	GDV_ACCESS_REMOTE_READ = 1 << 2,
	GDV_ACCESS_RELAXED_ORDERING = 1 << 20,

	GDV_WR_RDMA_WRITE = 0,
	GDV_WR_RDMA_WRITE_WITH_IMM = 1,
	GDV_WR_SEND = 2,
	GDV_WR_RDMA_READ = 4,
	GDV_SEND_SIGNALED = 1 << 1,

	GDV_WC_SUCCESS = 0,
	GDV_WC_WR_FLUSH_ERR = 5,
	GDV_WC_REM_ACCESS_ERR = 10,
	GDV_WC_SEND = 0,
	GDV_WC_RDMA_WRITE = 1,
	GDV_WC_RECV = 1 << 7,
	GDV_WC_RECV_RDMA_WITH_IMM = (1 << 7) + 1,
	GDV_WC_WITH_IMM = 1 << 1,

	GDV_QPT_RC = 2,
	GDV_QPS_ERR = 6,
	GDV_QP_STATE = 1,

	GDV_PORT_ACTIVE = 4,
	GDV_LINK_LAYER_INFINIBAND = 1,
	GDV_LINK_LAYER_ETHERNET = 2,

	GDV_PS_TCP = 0x0106,

	GDV_CM_EVENT_ADDR_RESOLVED = 0,
	GDV_CM_EVENT_ADDR_ERROR = 1,
	GDV_CM_EVENT_ROUTE_RESOLVED = 2,
	GDV_CM_EVENT_ROUTE_ERROR = 3,
	GDV_CM_EVENT_CONNECT_REQUEST = 4,
	GDV_CM_EVENT_CONNECT_RESPONSE = 5,
	GDV_CM_EVENT_CONNECT_ERROR = 6,
	GDV_CM_EVENT_UNREACHABLE = 7,
	GDV_CM_EVENT_REJECTED = 8,
	GDV_CM_EVENT_ESTABLISHED = 9,
	GDV_CM_EVENT_DISCONNECTED = 10,
	GDV_CM_EVENT_DEVICE_REMOVAL = 11,
	GDV_CM_EVENT_ADDR_CHANGE = 14,
	GDV_CM_EVENT_TIMEWAIT_EXIT = 15,
};

#endif
