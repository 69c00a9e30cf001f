# embed_binary.cmake - turns a binary file into a C source defining a byte array,
# so the compiled BPF object is part of the library (no file lookup at run time).
# Usage: cmake -DINPUT=file.o -DOUTPUT=out.h -DSYMBOL=name -P embed_binary.cmake
file(READ "${INPUT}" content HEX)
string(LENGTH "${content}" hex_length)
math(EXPR byte_count "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n    " bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp"
  "/* Generated from ${INPUT} by embed_binary.cmake: do not edit. */\n"
  "#include <stddef.h>\n"
  "static const unsigned char ${SYMBOL}[] __attribute__((aligned(8))) = {\n    ${bytes}\n};\n"
  "static const size_t ${SYMBOL}_size = ${byte_count};\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
