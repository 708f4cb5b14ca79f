/* tests/helpers/check_output.c - checks tools' real answers against their output schemas in
 * the built-in catalog, with the validator runboxd and runbox use.
 *
 *   check_output FILE     FILE: one answer per line, "<tool>\t<JSON answer>"
 *
 * For each answer: the tool must have an outputSchema that lists its fields (properties);
 * Roblox's [] for an empty object is mended as runboxd mends it (schema_coerce_empty_objects);
 * an image tool's picture (data, format) is left out, since it becomes image content;
 * the answer must validate; and every top-level member must be declared, except the ones any
 * Studio answer may carry (note, undo, replayed, queue_ahead: docs/studio.md). Prints one line
 * per problem and a summary; exits 1 when there was any, 2 on a usage or I/O error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "catalog.h"
#include "schema.h"

#define LINE_MAX_BYTES (64u << 20)

static const char *const shared_members[] = {"note", "undo", "replayed", "queue_ahead"};

static int undeclared(const char *tool, const cJSON *schema, const cJSON *answer)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    const cJSON *m;
    int bad = 0;

    cJSON_ArrayForEach(m, answer)
    {
        bool shared = false;

        for (size_t i = 0; i < sizeof(shared_members) / sizeof(shared_members[0]); i++)
            shared = shared || strcmp(m->string, shared_members[i]) == 0;
        if (!shared && !cJSON_GetObjectItemCaseSensitive(props, m->string)) {
            printf("%s: the answer has \"%s\", which its outputSchema does not declare\n", tool,
                   m->string);
            bad++;
        }
    }
    return bad;
}

static int check_line(char *line)
{
    char *tab = strchr(line, '\t');
    const struct catalog_tool *t;
    const cJSON *schema;
    struct schema_report rep;
    cJSON *answer;
    int bad = 0;

    if (!tab) {
        printf("malformed line (no tab): %.80s\n", line);
        return 1;
    }
    *tab = '\0';
    t = catalog_find(catalog_builtin(), line);
    schema = t ? catalog_tool_output_schema(t) : NULL;
    if (!t || !schema || !cJSON_GetObjectItemCaseSensitive(schema, "properties")) {
        printf("%s: %s\n", line,
               !t ? "no such tool in the catalog"
                  : "answers JSON, but its outputSchema lists no fields");
        return 1;
    }
    answer = cJSON_Parse(tab + 1);
    if (!answer) {
        printf("%s: the answer is not JSON: %.80s\n", line, tab + 1);
        return 1;
    }
    if (catalog_tool_answers_image(t)) {
        /* The plugin's picture and its encoding become the image content (runboxd makes it a
         * PNG), not structuredContent. */
        cJSON_DeleteItemFromObjectCaseSensitive(answer, "data");
        cJSON_DeleteItemFromObjectCaseSensitive(answer, "format");
    }
    if (schema_coerce_empty_objects(schema, &answer) < 0) {
        puts("out of memory");
        cJSON_Delete(answer);
        return 1;
    }
    if (schema_validate(schema, answer, "structuredContent", &rep) < 0) {
        char *text = schema_report_text(&rep);

        printf("%s: %s\n", line, text ? text : "does not validate");
        free(text);
        bad++;
    }
    bad += undeclared(line, schema, answer);
    cJSON_Delete(answer);
    return bad;
}

int main(int argc, char **argv)
{
    FILE *f;
    char *line;
    int bad = 0, n = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: check_output FILE\n");
        return 2;
    }
    f = fopen(argv[1], "r");
    line = malloc(LINE_MAX_BYTES);
    if (!f || !line) {
        perror(argv[1]);
        free(line);
        if (f)
            fclose(f);
        return 2;
    }
    while (fgets(line, (int)LINE_MAX_BYTES, f)) {
        size_t len = strlen(line);

        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        if (!len)
            continue;
        n++;
        bad += check_line(line) ? 1 : 0;
    }
    fclose(f);
    free(line);
    printf("%d answers checked, %d failed\n", n, bad);
    return bad ? 1 : (n ? 0 : 1);
}
