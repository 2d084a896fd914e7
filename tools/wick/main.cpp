#include <cstdio>
#include "wick/wick.h"
int main() { std::printf("wick %s\n", wick::version()); }
