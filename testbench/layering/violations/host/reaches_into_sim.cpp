// A fixture for the layering test, never compiled: host code that includes the emulator.
#include "sim/server/server_sim.h"
#include <systemc>
