// A fixture for the layering test, never compiled: sim/ code outside its folders.
#pragma once
