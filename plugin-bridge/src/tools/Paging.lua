-- tools/Paging.lua - how the list tools cut their answers and let the caller continue (not a
-- tool group).
--
-- A list answer (search_objects, search_files, search_by_property, get_instance_children,
-- get_tagged, check_syntax, get_project_structure, summarize_game's classes) skips `offset`
-- matches, keeps at most `limit`, and counts every match, so the answer says
--   total        how many matched in all (counting stops at COUNT_MAX: then a note says so)
--   truncated    true when more matches follow this page
--   next_offset  the offset of the next page (only when truncated)
-- The place is read live, so a place edited between two pages may shift the matches a little.

local Paging = {}

Paging.COUNT_MAX = 500000 -- matches counted at most; a walk stops there
Paging.OFFSET_MAX = 10000000

local Pager = {}
Pager.__index = Pager

-- A pager over the matches of one walk: the integer arguments offset (default 0) and limit
-- (default def, at most max; limitName when the tool calls it otherwise).
function Paging.new(U, args, def, max, limitName)
	local p = setmetatable({}, Pager)
	p.offset = U.int(args, "offset", 0, 0, Paging.OFFSET_MAX)
	p.limit = U.int(args, limitName or "limit", def, 1, max)
	p.total = 0
	p.items = {}
	return p
end

-- Counts one match; keeps it when it falls on this page. item is the value or a function that
-- builds it (called only for the matches kept). Returns true when the walk should stop (the
-- count reached COUNT_MAX).
function Pager:add(item)
	self.total = self.total + 1
	if self.total > self.offset and #self.items < self.limit then
		if type(item) == "function" then
			item = item()
		end
		table.insert(self.items, item)
	end
	return self.total >= Paging.COUNT_MAX
end

-- True once this page is full (a walk that needs no total could stop here).
function Pager:full()
	return #self.items >= self.limit
end

-- Puts the page into out: out[key] = the matches, total, truncated, next_offset and a note
-- saying how to continue. what names the matches ("instances", "scripts").
function Pager:finish(out, key, what)
	out[key] = self.items
	out.total = self.total
	local shown = self.offset + #self.items
	out.truncated = shown < self.total
	if out.truncated then
		out.next_offset = shown
		out.note = "showing " .. (self.offset + 1) .. "-" .. shown .. " of " .. self.total .. " " .. what
			.. "; call again with offset=" .. shown .. " for more"
	elseif self.offset > 0 and #self.items == 0 then
		out.note = "offset " .. self.offset .. " is past the last of the " .. self.total .. " " .. what
	end
	if self.total >= Paging.COUNT_MAX then
		out.truncated = true
		out.note = (out.note and (out.note .. "; ") or "") .. "counting stopped at " .. Paging.COUNT_MAX
			.. " " .. what .. " (total is a lower bound): narrow the path"
	end
	return out
end

---------------------------------------------------------------- get_file_tree
-- The tree is cut by depth (a node with children below it has "more": N) and by max_nodes per
-- page: a node whose children were not all shown on this page has "more": N too. The cursor of
-- the next page names the first node not shown by the index of each node on the way down
-- ("2.5.1": the 2nd shown child of the root, its 5th, its 1st), after the depth it was made for
-- ("3:2.5.1"). A later page is a tree of the same root again: the ancestors of the first node it
-- shows come first, marked "continued": true (they were shown before), then the nodes that
-- follow in depth-first order. A page visits only what it shows and the ancestors of where it
-- starts (siblings shown before are skipped by index), so the first page of a 100 000-instance
-- place costs what it shows, and so does every later one.

local function parseCursor(cursor, depth)
	if cursor == nil then
		return nil
	end
	local d, rest = string.match(cursor, "^(%d+):([%d%.]+)$")
	if not d or tonumber(d) ~= depth then
		error("cursor \"" .. cursor .. "\" is not a next_cursor of get_file_tree with depth=" .. depth
			.. "; pass the next_cursor of the last answer with the same path and depth", 0)
	end
	local path = {}
	if string.find(rest, "..", 1, true) or string.sub(rest, 1, 1) == "." or string.sub(rest, -1) == "." then
		path = nil
	end
	for part in string.gmatch(path and rest or "", "[^%.]+") do
		local n = tonumber(part)
		if not n or n < 1 or n ~= math.floor(n) then
			error("cursor \"" .. cursor .. "\" is malformed; pass the next_cursor of the last answer", 0)
		end
		table.insert(path, n)
	end
	if path == nil or #path == 0 or #path > depth then
		error("cursor \"" .. cursor .. "\" is malformed; pass the next_cursor of the last answer", 0)
	end
	return path
end

-- opts: root, depth, maxNodes, cursor (string or nil), children(inst) -> list, label(inst) ->
-- node table, yield() called every few hundred nodes. Returns the answer fields.
function Paging.tree(opts)
	local depth, maxNodes = opts.depth, opts.maxNodes
	local resume = parseCursor(opts.cursor, depth)
	local shown, visits = 0, 0
	local trail = {}
	local nextCursor = nil
	-- r: the rest of the cursor path below inst (non-empty: inst is a strict ancestor of the
	-- node the page starts at, shown on an earlier page). Returns the node, or nil when the
	-- page is full (inst is then the first node not shown, unless one came before).
	local function build(inst, level, r)
		local ancestor = r ~= nil and #r > 0
		if not ancestor and shown >= maxNodes then
			if nextCursor == nil then
				nextCursor = depth .. ":" .. table.concat(trail, ".")
			end
			return nil
		end
		visits = visits + 1
		if visits % 500 == 0 then
			opts.yield()
		end
		local node = opts.label(inst)
		if ancestor then
			node.continued = true
		else
			shown = shown + 1
		end
		local list = opts.children(inst)
		if #list == 0 then
			return node
		end
		if level >= depth then
			node.more = #list
			return node
		end
		local first = ancestor and r[1] or 1
		if first > #list then
			error("the cursor does not fit the tree any more (the place changed since that page);"
				.. " call get_file_tree again without cursor", 0)
		end
		local kids, notShown = {}, 0
		for i = first, #list do
			trail[level + 1] = i
			if nextCursor ~= nil then
				notShown = #list - i + 1 -- the page is full: the rest of this level waits
				break
			end
			local below = nil
			if ancestor and i == first then
				below = {}
				for k = 2, #r do
					below[k - 1] = r[k]
				end
			end
			local child = build(list[i], level + 1, below)
			if child then
				table.insert(kids, child)
			else
				notShown = #list - i + 1
				break
			end
		end
		trail[level + 1] = nil
		if #kids > 0 then
			node.children = kids
		end
		if notShown > 0 then
			node.more = notShown
		end
		return node
	end
	local tree = build(opts.root, 0, resume)
	local out = { tree = tree, nodes = shown, truncated = nextCursor ~= nil }
	if nextCursor then
		out.next_cursor = nextCursor
		out.note = "stopped at max_nodes=" .. maxNodes .. "; call again with cursor=\"" .. nextCursor
			.. "\" and the same path and depth for the rest; \"more\": N counts the children still to come"
	end
	return out
end

return Paging
