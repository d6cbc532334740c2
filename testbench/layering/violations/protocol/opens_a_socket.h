// A fixture for the layering test, never compiled: the protocol layer with a socket.
#include <boost/asio.hpp>
#include "protocol/fabric_map.h"
