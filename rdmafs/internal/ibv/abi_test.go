package ibv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// abiStructs pairs each struct of abi.h with rdma-core's and lists the
// fields gdsload touches. whole: gdsload allocates it, so the sizes must
// match too.
var abiStructs = []struct {
	ours, real string
	whole      bool
	fields     []string
}{
	{"struct gdv_context", "struct ibv_context", false, []string{"device", "ops", "ops.poll_cq", "ops.req_notify_cq",
		"ops.post_send", "ops.post_recv", "ops._compat_async_event", "cmd_fd", "async_fd", "num_comp_vectors"}},
	{"struct gdv_context_ops", "struct ibv_context_ops", true, []string{"poll_cq", "req_notify_cq", "post_send", "post_recv"}},
	{"struct gdv_pd", "struct ibv_pd", true, []string{"context", "handle"}},
	{"struct gdv_mr", "struct ibv_mr", true, []string{"context", "pd", "addr", "length", "handle", "lkey", "rkey"}},
	{"struct gdv_comp_channel", "struct ibv_comp_channel", true, []string{"context", "fd", "refcnt"}},
	{"struct gdv_cq", "struct ibv_cq", false, []string{"context", "channel", "cq_context", "handle", "cqe"}},
	{"struct gdv_qp", "struct ibv_qp", false, []string{"context", "qp_context", "pd", "send_cq", "recv_cq", "srq", "handle",
		"qp_num", "state", "qp_type"}},
	{"struct gdv_qp_cap", "struct ibv_qp_cap", true, []string{"max_send_wr", "max_recv_wr", "max_send_sge", "max_recv_sge", "max_inline_data"}},
	{"struct gdv_qp_init_attr", "struct ibv_qp_init_attr", true, []string{"qp_context", "send_cq", "recv_cq", "srq", "cap", "qp_type", "sq_sig_all"}},
	{"struct gdv_sge", "struct ibv_sge", true, []string{"addr", "length", "lkey"}},
	{"struct gdv_send_wr", "struct ibv_send_wr", true, []string{"wr_id", "next", "sg_list", "num_sge", "opcode", "send_flags",
		"imm_data", "wr.rdma.remote_addr", "wr.rdma.rkey", "wr.atomic.rkey", "wr.ud.remote_qkey", "qp_type.xrc.remote_srqn",
		"bind_mw.bind_info.mw_access_flags", "tso.mss"}},
	{"struct gdv_recv_wr", "struct ibv_recv_wr", true, []string{"wr_id", "next", "sg_list", "num_sge"}},
	{"struct gdv_wc", "struct ibv_wc", true, []string{"wr_id", "status", "opcode", "vendor_err", "byte_len", "imm_data",
		"qp_num", "src_qp", "wc_flags", "pkey_index", "slid", "sl", "dlid_path_bits"}},
	{"struct gdv_ah_attr", "struct ibv_ah_attr", true, []string{"grh", "grh.flow_label", "grh.traffic_class", "dlid", "port_num"}},
	{"struct gdv_qp_attr", "struct ibv_qp_attr", true, []string{"qp_state", "cur_qp_state", "cap", "ah_attr", "alt_ah_attr",
		"pkey_index", "max_dest_rd_atomic", "alt_timeout", "rate_limit"}},
	{"struct gdv_device_attr", "struct ibv_device_attr", true, []string{"fw_ver", "node_guid", "max_mr_size", "device_cap_flags",
		"atomic_cap", "max_srq_sge", "max_pkeys", "local_ca_ack_delay", "phys_port_cnt"}},
	{"struct gdv_port_attr", "struct ibv_port_attr", false, []string{"state", "max_mtu", "active_mtu", "gid_tbl_len", "lid",
		"active_width", "active_speed", "phys_state", "link_layer", "flags"}},
	{"struct gdv_event_channel", "struct rdma_event_channel", true, []string{"fd"}},
	{"struct gdv_cm_id", "struct rdma_cm_id", false, []string{"verbs", "channel", "context", "qp"}},
	{"struct gdv_conn_param", "struct rdma_conn_param", true, []string{"private_data", "private_data_len", "responder_resources",
		"initiator_depth", "flow_control", "retry_count", "rnr_retry_count", "srq", "qp_num"}},
	{"struct gdv_cm_event", "struct rdma_cm_event", false, []string{"id", "listen_id", "event", "status",
		"param.conn.private_data", "param.conn.private_data_len"}},
}

// abiConstants pairs each constant of abi.h with rdma-core's.
var abiConstants = [][2]string{
	{"GDV_ACCESS_LOCAL_WRITE", "IBV_ACCESS_LOCAL_WRITE"}, {"GDV_ACCESS_REMOTE_WRITE", "IBV_ACCESS_REMOTE_WRITE"},
	{"GDV_ACCESS_REMOTE_READ", "IBV_ACCESS_REMOTE_READ"}, {"GDV_ACCESS_RELAXED_ORDERING", "IBV_ACCESS_RELAXED_ORDERING"},
	{"GDV_WR_RDMA_WRITE", "IBV_WR_RDMA_WRITE"}, {"GDV_WR_RDMA_WRITE_WITH_IMM", "IBV_WR_RDMA_WRITE_WITH_IMM"},
	{"GDV_WR_SEND", "IBV_WR_SEND"}, {"GDV_WR_RDMA_READ", "IBV_WR_RDMA_READ"}, {"GDV_SEND_SIGNALED", "IBV_SEND_SIGNALED"},
	{"GDV_WC_SUCCESS", "IBV_WC_SUCCESS"}, {"GDV_WC_WR_FLUSH_ERR", "IBV_WC_WR_FLUSH_ERR"},
	{"GDV_WC_REM_ACCESS_ERR", "IBV_WC_REM_ACCESS_ERR"}, {"GDV_WC_SEND", "IBV_WC_SEND"}, {"GDV_WC_RDMA_WRITE", "IBV_WC_RDMA_WRITE"},
	{"GDV_WC_RECV", "IBV_WC_RECV"}, {"GDV_WC_RECV_RDMA_WITH_IMM", "IBV_WC_RECV_RDMA_WITH_IMM"}, {"GDV_WC_WITH_IMM", "IBV_WC_WITH_IMM"},
	{"GDV_QPT_RC", "IBV_QPT_RC"}, {"GDV_QPS_ERR", "IBV_QPS_ERR"}, {"GDV_QP_STATE", "IBV_QP_STATE"},
	{"GDV_PORT_ACTIVE", "IBV_PORT_ACTIVE"}, {"GDV_LINK_LAYER_INFINIBAND", "IBV_LINK_LAYER_INFINIBAND"},
	{"GDV_LINK_LAYER_ETHERNET", "IBV_LINK_LAYER_ETHERNET"}, {"GDV_PS_TCP", "RDMA_PS_TCP"},
	{"GDV_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_RESOLVED"}, {"GDV_CM_EVENT_ADDR_ERROR", "RDMA_CM_EVENT_ADDR_ERROR"},
	{"GDV_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_RESOLVED"}, {"GDV_CM_EVENT_ROUTE_ERROR", "RDMA_CM_EVENT_ROUTE_ERROR"},
	{"GDV_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_REQUEST"}, {"GDV_CM_EVENT_CONNECT_RESPONSE", "RDMA_CM_EVENT_CONNECT_RESPONSE"},
	{"GDV_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_CONNECT_ERROR"}, {"GDV_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_UNREACHABLE"},
	{"GDV_CM_EVENT_REJECTED", "RDMA_CM_EVENT_REJECTED"}, {"GDV_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_ESTABLISHED"},
	{"GDV_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DISCONNECTED"}, {"GDV_CM_EVENT_DEVICE_REMOVAL", "RDMA_CM_EVENT_DEVICE_REMOVAL"},
	{"GDV_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_ADDR_CHANGE"}, {"GDV_CM_EVENT_TIMEWAIT_EXIT", "RDMA_CM_EVENT_TIMEWAIT_EXIT"},
}

// abiCheckSource is a C file that compiles only if abi.h agrees with the
// installed rdma-core headers.
func abiCheckSource() string {
	var b strings.Builder
	b.WriteString("#include <stddef.h>\n#include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>\n#include \"abi.h\"\n")
	// The port buffer must hold the library's ibv_port_attr.
	b.WriteString("_Static_assert(sizeof(struct ibv_port_attr) <= GDV_PORT_ATTR_BUF, \"ibv_port_attr outgrew GDV_PORT_ATTR_BUF\");\n")
	b.WriteString("_Static_assert(offsetof(struct rdma_cm_id, route.addr.src_addr) == offsetof(struct gdv_cm_id, src_addr), \"rdma_cm_id source address\");\n")
	b.WriteString("_Static_assert(offsetof(struct rdma_cm_id, route.addr.dst_addr) == offsetof(struct gdv_cm_id, dst_addr), \"rdma_cm_id peer address\");\n")
	for _, s := range abiStructs {
		if s.whole {
			b.WriteString("_Static_assert(sizeof(" + s.ours + ") == sizeof(" + s.real + "), \"size of " + s.real + "\");\n")
		} else {
			b.WriteString("_Static_assert(sizeof(" + s.ours + ") <= sizeof(" + s.real + "), \"prefix of " + s.real + "\");\n")
		}
		for _, f := range s.fields {
			b.WriteString("_Static_assert(offsetof(" + s.ours + ", " + f + ") == offsetof(" + s.real + ", " + f +
				"), \"" + s.real + "." + f + "\");\n")
			b.WriteString("_Static_assert(sizeof(((" + s.ours + " *)0)->" + f + ") == sizeof(((" + s.real + " *)0)->" + f +
				"), \"size of " + s.real + "." + f + "\");\n")
		}
	}
	for _, c := range abiConstants {
		b.WriteString("_Static_assert((long)" + c[0] + " == (long)" + c[1] + ", \"" + c[1] + "\");\n")
	}
	return b.String()
}

// requireHeaders, when set (CI sets it), turns a missing compiler or
// missing rdma-core headers into a failure instead of a skip.
const requireHeaders = "GDSLOAD_REQUIRE_RDMA_HEADERS"

// TestABIAgainstRDMACoreHeaders compiles static assertions of abi.h's
// sizes, offsets and constants against rdma-core's verbs.h and rdma_cma.h.
// CI installs libibverbs-dev and librdmacm-dev; elsewhere the test skips,
// saying so.
func TestABIAgainstRDMACoreHeaders(t *testing.T) {
	skip := t.Skipf
	if os.Getenv(requireHeaders) != "" {
		skip = t.Fatalf
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		skip("no C compiler (%s): %v", cc, err)
	}
	probe := exec.Command(cc, "-E", "-x", "c", "-")
	probe.Stdin = strings.NewReader("#include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>\n")
	if out, err := probe.CombinedOutput(); err != nil {
		skip("rdma-core headers not installed (apt-get install libibverbs-dev librdmacm-dev to check the ABI): %s", firstLine(out))
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	src := filepath.Join(t.TempDir(), "abi_check.c")
	require.NoError(t, os.WriteFile(src, []byte(abiCheckSource()), 0o644))
	out, err := exec.Command(cc, "-std=gnu11", "-fsyntax-only", "-Wall", "-I", wd, src).CombinedOutput()
	require.NoError(t, err, "abi.h disagrees with rdma-core's headers:\n%s", out)
	t.Logf("%d structs and %d constants agree with rdma-core's headers", len(abiStructs), len(abiConstants))
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
