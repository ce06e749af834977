package loader

// Route names the way bytes travel from storage to a destination. The names
// follow the transfer types gdsio users know; results print them under
// "path", as gdsio does.
type Route string

// The routes.
const (
	// RouteGDS reads with cuFileRead from storage straight into GPU memory
	// (gdsio GPUD).
	RouteGDS Route = "gds"
	// RouteBounce reads into pinned host buffers and copies them to the GPU
	// asynchronously (gdsio CPU_GPU).
	RouteBounce Route = "bounce"
	// RouteHost reads into host memory (gdsio CPUONLY).
	RouteHost Route = "host"
	// RouteRDMA has a remote server write into registered memory.
	RouteRDMA Route = "rdma"
)

// Router is an optional capability of a Destination: the route bytes take
// into it. A destination reports its own route, so a load's result can
// never name one its destination does not take; destinations without it
// are host memory (RouteHost).
type Router interface {
	Route() Route
}

// routeOfDest is dst's route.
func routeOfDest(dst Destination) Route {
	if r, ok := dst.(Router); ok {
		return r.Route()
	}
	return RouteHost
}
