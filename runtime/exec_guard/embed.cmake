# Writes a C++ source holding the bytes of INPUT as the array NAME (and NAME_size), so
# that a binary is part of a library (a content change changes the source, so compiler
# caches see it). cmake -DINPUT=file -DOUTPUT=file.cpp -DNAME=symbol -P embed.cmake
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" chars)
math(EXPR size "${chars} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE "${OUTPUT}.tmp" "// Generated from ${INPUT} by embed.cmake; do not edit.\n#include <cstddef>\nextern const unsigned char ${NAME}[] = {${body}};\nextern const std::size_t ${NAME}_size = ${size};\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
