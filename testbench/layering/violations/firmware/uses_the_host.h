// A fixture for the layering test, never compiled: firmware that includes host code.
#include "host/fabric/board.h"
