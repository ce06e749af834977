// Package ibv binds the part of libibverbs and librdmacm (rdma-core) that
// the rdmafs verbs transport uses. The libraries are loaded at run time
// with dlopen and every function is looked up by symbol version with
// dlvsym, so gdsload builds without rdma-core's headers and runs, minus
// RDMA, where rdma-core is missing. The structs it shares with the
// libraries are declared in abi.h and checked against rdma-core's own
// headers by abi_test.go wherever those are installed.
//
// ibv_post_send, ibv_post_recv, ibv_poll_cq and ibv_req_notify_cq are
// static inline functions of verbs.h that call through the device
// context's operation table; lib.c does the same.
//
// Waiting never blocks an operating-system thread: the rdma_cm event
// channel and the completion channel file descriptors are set
// non-blocking and waited on by the Go runtime's poller (a duplicate
// descriptor wrapped in an os.File), so a wait can be interrupted by
// closing it.
//
// Nothing here keeps global state: a Lib is what Load returns, and its
// objects are explicit handles the caller destroys in the order verbs
// demands (memory regions and queue pairs before their protection domain,
// queue pairs before their completion queue, identifiers before their
// event channel).
package ibv
