// A fixture for the layering test, never compiled: the link layer that includes the server above it.
#pragma once
#include "sim/server/server_sim.h"
