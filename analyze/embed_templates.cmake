# Compile the gnuplot templates of plots/ into a C file (cmake -P): each
# template becomes a NUL-terminated byte array, so the binary needs no
# installed data files. Inputs: DIR (plots/), NAMES (comma-separated), OUT.
set(body "/* Generated from the templates in plots/ by analyze/embed_templates.cmake; do not edit. */\n#include \"analyze/plot_templates.h\"\n\n")
set(table "")
string(REPLACE "," ";" NAMES "${NAMES}")
foreach(name ${NAMES})
    file(READ "${DIR}/${name}.gp" hex HEX)
    string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," arr "${hex}")
    string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" arr "${arr}")
    string(APPEND body "static const char tpl_${name}[] = {\n${arr}0x00};\n")
    string(APPEND table "    {\"${name}\", tpl_${name}},\n")
endforeach()
string(APPEND body "\nconst struct lt_analyze_tpl lt_analyze_tpls[] = {\n${table}    {0, 0},\n};\n")
file(WRITE "${OUT}.tmp" "${body}")
configure_file("${OUT}.tmp" "${OUT}" COPYONLY)
