/* daemon/bridge_json.c - the pure parts of the Studio bridge (see bridge.h): the routing table
 * of play-mode tools, deadlines, role names, id checks, the sanitizer for Roblox's JSON and the
 * streaming id finder for result bodies too large to keep. No state, no locks, no I/O. */
#include "bridge.h"
#include "bridge_int.h"

#include <ctype.h>
#include <stdio.h>
#include <math.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

/* The play-mode tools: while a play test runs they go to its server instance (the plugin copy
 * in the server DataModel, where StudioTestService:EndTest works and scripts run in the live
 * game); with no play test they go to the active edit instance, which starts one or answers
 * that none runs. Every other tool goes to the edit instance only. */
static const char *const play_tools[] = {"get_studio_mode", "run_script_in_play_mode", "stop_play"};

unsigned bridge_tool_roles(const char *tool)
{
    for (size_t i = 0; i < sizeof(play_tools) / sizeof(play_tools[0]); i++)
        if (strcmp(play_tools[i], tool) == 0)
            return BRIDGE_TO_EDIT | BRIDGE_TO_SERVER;
    return BRIDGE_TO_EDIT;
}

int64_t bridge_deadline_for(const char *tool, const cJSON *args, int deadline_ms)
{
    const cJSON *t;

    if (strcmp(tool, "run_script_in_play_mode") != 0 || !args)
        return deadline_ms;
    t = cJSON_GetObjectItemCaseSensitive(args, "timeout");
    /* The schema bounds it; the clamp keeps a curl caller's odd value sane (at most a day). */
    if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble) || t->valuedouble <= 0)
        return deadline_ms;
    if (t->valuedouble > 86400)
        return (int64_t)86400 * 1000 + BRIDGE_PLAY_MARGIN_MS;
    return (int64_t)(t->valuedouble * 1000) + BRIDGE_PLAY_MARGIN_MS;
}

static const char *const role_names[] = {"edit", "server", "client"};

int bridge_parse_role(const char *s)
{
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, role_names[i]) == 0)
            return i;
    return -1;
}

const char *bridge_role_name(enum bridge_role role)
{
    return (unsigned)role < 3 ? role_names[role] : "?";
}

bool bridge_id_ok(const char *id)
{
    size_t n = 0;

    if (!id)
        return false;
    for (; id[n]; n++) {
        unsigned char ch = (unsigned char)id[n];

        if (n >= BRIDGE_ID_MAX - 1 || !(isalnum(ch) || strchr("_.:{}-", ch)))
            return false;
    }
    return n > 0;
}

/* ---- the sanitizer ---- */

static bool is_word_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* The length of a non-finite token at in[i..len) (inf, -inf, nan, -nan, Infinity, -Infinity,
 * NaN; any case), or 0. */
static size_t nonfinite_len(const char *in, size_t i, size_t len)
{
    static const char *const words[] = {"infinity", "inf", "nan"};
    size_t start = i;

    if (i < len && in[i] == '-')
        i++;
    for (size_t w = 0; w < 3; w++) {
        size_t n = strlen(words[w]);

        if (len - i >= n && strncasecmp(in + i, words[w], n) == 0 &&
            (i + n == len || !is_word_char(in[i + n])))
            return i + n - start;
    }
    return 0;
}

char *bridge_json_sanitize(const char *in, size_t len, size_t *outlen)
{
    /* "inf" -> "null" is the only growth: at most one byte per three. */
    char *out = malloc(len + len / 3 + 2);
    bool in_str = false, esc = false;
    size_t o = 0;

    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        char ch = in[i];
        size_t n;

        if (in_str) {
            if (esc)
                esc = false;
            else if (ch == '\\')
                esc = true;
            else if (ch == '"')
                in_str = false;
        } else if (ch == '"') {
            in_str = true;
        } else if ((ch == '-' || isalpha((unsigned char)ch)) &&
                   (i == 0 || !is_word_char(in[i - 1])) && (n = nonfinite_len(in, i, len)) > 0) {
            memcpy(out + o, "null", 4);
            o += 4;
            i += n - 1;
            continue;
        }
        out[o++] = ch;
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

/* ---- the streaming id finder ---- */

enum { SCAN_OUT, SCAN_KEY, SCAN_IDVAL, SCAN_STR };

void bridge_idscan_init(struct bridge_idscan *s)
{
    memset(s, 0, sizeof(*s));
}

static void scan_string_char(struct bridge_idscan *s, char ch)
{
    if (s->esc) {
        s->esc = false;
    } else if (ch == '\\') {
        s->esc = true;
        s->klen = BRIDGE_ID_MAX; /* an escaped key or id is not the plain "id" we look for */
        s->idlen = BRIDGE_ID_MAX;
        return;
    } else if (ch == '"') {
        if (s->state == SCAN_KEY)
            s->key_is_id = s->klen == 2 && memcmp(s->key, "id", 2) == 0;
        else if (s->state == SCAN_IDVAL) {
            s->id_seen = true;
            if (s->idlen < BRIDGE_ID_MAX) {
                s->id[s->idlen] = '\0';
                s->found = bridge_id_ok(s->id);
            }
        }
        s->state = SCAN_OUT;
        return;
    }
    if (s->state == SCAN_KEY) {
        if (s->klen < sizeof(s->key))
            s->key[s->klen] = ch;
        if (s->klen < BRIDGE_ID_MAX)
            s->klen++;
    } else if (s->state == SCAN_IDVAL) {
        if (s->idlen < BRIDGE_ID_MAX - 1)
            s->id[s->idlen++] = ch;
        else
            s->idlen = BRIDGE_ID_MAX;
    }
}

static void scan_outside_char(struct bridge_idscan *s, char ch)
{
    /* The first "id" member's value is not a string: that member decided, and no later "id"
     * may stand in for it (the parsed body's lookup would find this one too). */
    if (s->depth == 1 && s->key_is_id && !s->expect_key && !s->id_seen && ch != ':' && ch != '"' &&
        (unsigned char)ch > ' ') /* cJSON skips every byte up to ' ' as space */
        s->id_seen = true;
    switch (ch) {
    case '"':
        if (s->depth == 1 && s->expect_key && !s->closed) {
            s->state = SCAN_KEY;
            s->klen = 0;
        } else if (s->depth == 1 && s->key_is_id && !s->id_seen && !s->closed) {
            s->state = SCAN_IDVAL;
            s->idlen = 0;
        } else {
            s->state = SCAN_STR;
        }
        break;
    case '{':
    case '[':
        s->depth++;
        if (s->depth > s->max_depth)
            s->max_depth = s->depth;
        s->expect_key = s->depth == 1 && ch == '{';
        break;
    case '}':
    case ']':
        s->depth--;
        if (s->depth <= 0)
            s->closed = true; /* a trailing value is not the result */
        break;
    case ':':
        if (s->depth == 1)
            s->expect_key = false;
        break;
    case ',':
        if (s->depth == 1) {
            s->expect_key = true;
            s->key_is_id = false;
        }
        break;
    default:
        break;
    }
}

void bridge_idscan_feed(struct bridge_idscan *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s->state == SCAN_OUT)
            scan_outside_char(s, p[i]);
        else
            scan_string_char(s, p[i]);
    }
}

/* ---- answers ---- */

static size_t skip_space(const char *s, size_t i, size_t len)
{
    while (i < len && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
        i++;
    return i;
}

int bridge__add_member(struct bridge_reply *r, const char *name, const char *value_json)
{
    size_t open, rest, extra, n;
    bool empty;
    char *p;
    int w;

    if (!r->ok || !r->is_json || !r->data)
        return 0;
    open = skip_space(r->data, 0, r->len);
    if (open == r->len || r->data[open] != '{')
        return 0;
    rest = skip_space(r->data, open + 1, r->len);
    empty = rest < r->len && r->data[rest] == '}';
    /* "name":value, -- the comma only when the object has members */
    extra = strlen(name) + strlen(value_json) + 4;
    p = malloc(r->len + extra + 1);
    if (!p)
        return -1;
    memcpy(p, r->data, open + 1);
    w = snprintf(p + open + 1, extra + 1, "\"%s\":%s%s", name, value_json, empty ? "" : ",");
    if (w < 0 || (size_t)w > extra) {
        free(p);
        return -1;
    }
    n = open + 1 + (size_t)w;
    memcpy(p + n, r->data + open + 1, r->len - open - 1);
    n += r->len - open - 1;
    p[n] = '\0';
    free(r->data);
    r->data = p;
    r->len = n;
    return 0;
}
