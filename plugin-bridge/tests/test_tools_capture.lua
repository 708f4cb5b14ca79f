-- test_tools_capture.lua - capture_screenshot against the fake StudioCaptureService: the
-- permission prompt, waiting for the buffer, scaling to max_size, PNG or RGBA8 pixels as base64,
-- and each way a capture fails; and the base64 encoder it uses (RFC 4648's vectors).

local Fake = require("fake")

local function capSvc(place)
	return place.state[place.game:GetService("StudioCaptureService")]
end

-- Decodes base64 (test side, independent of the plugin's encoder).
local function unb64(s)
	local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	local val = {}
	for i = 1, 64 do
		val[string.sub(alphabet, i, i)] = i - 1
	end
	local out = {}
	for i = 1, #s, 4 do
		local q = string.sub(s, i, i + 3)
		local n, pad = 0, 0
		for k = 1, 4 do
			local ch = string.sub(q, k, k)
			if ch == "=" then
				pad = pad + 1
				n = n * 64
			else
				n = n * 64 + assert(val[ch], "bad base64 character " .. ch)
			end
		end
		local bytes = string.char(math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
		out[#out + 1] = string.sub(bytes, 1, 3 - pad)
	end
	return table.concat(out)
end

test("base64 matches RFC 4648's test vectors", function()
	Fake.setup()
	local U = Fake.load("tools/Util")
	local vectors = { [""] = "", f = "Zg==", fo = "Zm8=", foo = "Zm9v", foob = "Zm9vYg==",
		fooba = "Zm9vYmE=", foobar = "Zm9vYmFy" }
	for plain, coded in pairs(vectors) do
		eq(U.base64(plain), coded, "base64(" .. plain .. ")")
	end
	local all = {}
	for i = 0, 255 do
		all[#all + 1] = string.char(i)
	end
	local bytes = string.rep(table.concat(all), 300) -- 76 800 bytes: crosses a yield point
	local yields = 0
	eq(unb64(U.base64(bytes, function() yields = yields + 1 end)), bytes, "every byte round-trips")
	truthy(yields >= 1, "a long encode yields")
end)

test("capture_screenshot asks for permission once, waits for the buffer, answers the pixels", function()
	local place, run = Fake.setup()
	local r = run("capture_screenshot", {})
	eq(capSvc(place).asked, 1, "asked once")
	eq(r.format, "rgba8")
	eq(r.width, 8)
	eq(r.height, 4)
	eq(r.originalWidth, 8)
	local px = unb64(r.data)
	eq(#px, 8 * 4 * 4, "one RGBA quadruple per pixel")
	eq(string.sub(px, 4 * 9 + 1, 4 * 9 + 4), string.char(1, 1, 2, 255), "pixel (1,1) of the gradient")
	run("capture_screenshot", {})
	eq(capSvc(place).asked, 1, "permission is not asked again")
end)

test("capture_screenshot scales a large viewport to max_size, keeping its shape", function()
	local place, run = Fake.setup()
	local st = capSvc(place)
	st.width, st.height = 200, 100
	local r = run("capture_screenshot", { max_size = 64 })
	eq(r.width, 64)
	eq(r.height, 32)
	eq(r.originalWidth, 200)
	eq(r.originalHeight, 100)
	eq(#unb64(r.data), 64 * 32 * 4)
	eq(r.note, nil)
end)

test("capture_screenshot passes Studio's PNG through; one it cannot scale says so", function()
	local place, run = Fake.setup()
	local st = capSvc(place)
	st.png = "\137PNG\r\n\26\n" .. string.rep("x", 40)
	st.width, st.height = 2000, 1000
	local r = run("capture_screenshot", { max_size = 500 })
	eq(r.format, "png")
	eq(unb64(r.data), st.png)
	eq(r.width, 2000, "not scaled")
	truthy(r.note and r.note:find("not scaled to max_size=500", 1, true), tostring(r.note))
end)

test("capture_screenshot fails with what to do when it cannot capture", function()
	local place, run = Fake.setup()
	local st = capSvc(place)
	st.deny = true
	raises(function() run("capture_screenshot", {}) end, "did not allow screenshots")
	st.deny, st.inactive = false, true
	raises(function() run("capture_screenshot", {}) end, "only the window in front")
	st.inactive, st.fail = false, "the viewport is minimised"
	raises(function() run("capture_screenshot", {}) end, "could not capture: the viewport is minimised")
end)
