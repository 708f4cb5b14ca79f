/* common/catalog_compile.c - a step of the build, in neither binary: reads the tool catalog's
 * JSON documents (common/tools/<group>.json), checks them as catalog_new() does (the build stops at
 * the first problem, naming the document, the tool and the rule), and writes a C file with what
 * catalog_builtin.c needs at run time: each tool's facts and its JSON printed compact (its
 * object, its listed input schema and annotations, its output schema, its tools/list entry),
 * sorted by name, and the profiles document. A start of runbox then parses no tool.
 *
 *   catalog_compile OUT.c DOC.json...
 *
 * OUT is written whole or not at all (a temporary file renamed over it). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "catalog_int.h"

#define LITERAL_LINE 96 /* characters of a string literal per line of OUT */

static const char *const route_names[] = {
    [CATALOG_ROUTE_LOCAL] = "CATALOG_ROUTE_LOCAL",
    [CATALOG_ROUTE_STUDIO] = "CATALOG_ROUTE_STUDIO",
    [CATALOG_ROUTE_EXTERNAL] = "CATALOG_ROUTE_EXTERNAL",
};

static const char *const budget_names[] = {
    [CATALOG_BUDGET_NONE] = "CATALOG_BUDGET_NONE",
    [CATALOG_BUDGET_LONG] = "CATALOG_BUDGET_LONG",
    [CATALOG_BUDGET_SEARCH] = "CATALOG_BUDGET_SEARCH",
    [CATALOG_BUDGET_EXTERNAL] = "CATALOG_BUDGET_EXTERNAL",
};

/* The whole file, NUL-terminated, or NULL with a message. Owned. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long size;

    if (!f || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(text = malloc((size_t)size + 1)) || fread(text, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "catalog_compile: cannot read %s: %s\n", path, strerror(errno));
        free(text);
        text = NULL;
    } else {
        text[size] = '\0';
    }
    if (f)
        fclose(f);
    return text;
}

/* s as a C string literal (split over lines), or NULL as NULL. Bytes other than printable
 * ASCII are octal escapes; '?' is escaped too, so that no trigraph can form. */
static void put_literal(FILE *out, const char *s)
{
    size_t col = 0;

    if (!s) {
        fputs("NULL", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (col >= LITERAL_LINE) {
            fputs("\"\n        \"", out);
            col = 0;
        }
        if (*p == '"' || *p == '\\' || *p == '?')
            col += (size_t)fprintf(out, "\\%c", *p);
        else if (*p >= 0x20 && *p < 0x7f)
            col += (size_t)(fputc(*p, out) != EOF);
        else
            col += (size_t)fprintf(out, "\\%03o", *p);
    }
    fputc('"', out);
}

/* A tree printed compact, or NULL for NULL; exits when memory runs out. Owned. */
static char *print(const cJSON *tree)
{
    char *text;

    if (!tree)
        return NULL;
    text = cJSON_PrintUnformatted(tree);
    if (!text) {
        fputs("catalog_compile: out of memory\n", stderr);
        exit(1);
    }
    return text;
}

static const char *string_of(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void put_tool(FILE *out, const struct catalog_tool *t)
{
    cJSON *input = catalog_listed_schema(t->input_schema);
    cJSON *ann = NULL;
    int ann_rc =
        catalog__listed_annotations(cJSON_GetObjectItemCaseSensitive(t->tool, "annotations"), &ann);
    cJSON *entry = catalog__tool_entry(t);
    char *texts[5];
    static const char *const fields[] = {"object", "input", "output", "annotations", "entry"};

    if (!input || ann_rc < 0 || !entry) {
        fputs("catalog_compile: out of memory\n", stderr);
        exit(1);
    }
    texts[0] = print(t->tool);
    texts[1] = print(input);
    texts[2] = print(t->output_schema);
    texts[3] = ann ? print(ann) : NULL;
    texts[4] = print(entry);
    fputs("    {\n        .name = ", out);
    put_literal(out, t->name);
    fputs(",\n        .group = ", out);
    put_literal(out, t->group);
    fputs(",\n        .title = ", out);
    put_literal(out, string_of(t->tool, "title"));
    fputs(",\n        .description = ", out);
    put_literal(out, string_of(t->tool, "description"));
    fprintf(out,
            ",\n        .route = %s,\n        .budget = %s,\n        .read_only = %s,"
            "\n        .image = %s,\n        .host_tools = %s",
            route_names[t->route], budget_names[t->budget], t->read_only ? "true" : "false",
            t->image ? "true" : "false", t->host_tools ? "true" : "false");
    for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
        fprintf(out, ",\n        .%s = ", fields[k]);
        put_literal(out, texts[k]);
        cJSON_free(texts[k]);
    }
    fputs(",\n    },\n", out);
    cJSON_Delete(input);
    cJSON_Delete(ann);
    cJSON_Delete(entry);
}

/* The profiles document (the one with a "profiles" member) printed compact, or "". Owned. */
static char *profiles_text(const struct catalog *cat)
{
    for (size_t i = 0; i < cat->ndocs; i++)
        if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(cat->docs[i], "profiles")))
            return print(cat->docs[i]);
    return strdup("");
}

int main(int argc, char **argv)
{
    size_t n = argc > 2 ? (size_t)argc - 2 : 0;
    char **docs;
    struct errinfo err = {0};
    struct catalog *cat;
    char tmp[4096], *profiles;
    FILE *out;
    bool bad_write;
    int rc = 1;

    if (argc < 3) {
        fputs("usage: catalog_compile OUT.c DOC.json...\n", stderr);
        return 2;
    }
    docs = calloc(n + 1, sizeof(*docs));
    for (size_t i = 0; i < n; i++)
        if (!docs || !(docs[i] = read_file(argv[i + 2])))
            goto done;
    cat = catalog_new((const char *const *)docs, n, &err);
    if (!cat) {
        fprintf(stderr, "catalog_compile: the tool catalog (common/tools/*.json) is broken: %s\n",
                err.msg);
        goto done;
    }
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]) >= sizeof(tmp) ||
        !(out = fopen(tmp, "w"))) {
        fprintf(stderr, "catalog_compile: cannot write %s.tmp\n", argv[1]);
        catalog_free(cat);
        goto done;
    }
    fputs("/* Generated by common/catalog_compile.c from the JSON files in common/tools/. Do not "
          "edit. */\n"
          "#include \"catalog_int.h\"\n\n"
          "const struct catalog_compiled_tool catalog_compiled_tools[] = {\n",
          out);
    for (size_t i = 0; i < cat->ntools; i++)
        put_tool(out, &cat->tools[i]);
    fprintf(out, "};\n\nconst size_t catalog_compiled_ntools = %zu;\n\n", cat->ntools);
    fputs("const char catalog_compiled_profiles[] = ", out);
    profiles = profiles_text(cat);
    if (!profiles) {
        fputs("catalog_compile: out of memory\n", stderr);
        exit(1);
    }
    put_literal(out, profiles);
    fputs(";\n", out);
    free(profiles);
    catalog_free(cat);
    bad_write = ferror(out) != 0;
    bad_write = fclose(out) != 0 || bad_write;
    if (bad_write || rename(tmp, argv[1]) != 0) {
        fprintf(stderr, "catalog_compile: cannot write %s: %s\n", argv[1], strerror(errno));
        remove(tmp);
        goto done;
    }
    rc = 0;
done:
    for (size_t i = 0; docs && i < n; i++)
        free(docs[i]);
    free(docs);
    return rc;
}
